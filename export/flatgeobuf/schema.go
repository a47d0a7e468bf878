package flatgeobuf

import (
	flatbuffers "github.com/google/flatbuffers/go"
)

// The FlatGeobuf schema (header.fbs and feature.fbs of FlatGeobuf 3): the numbers of
// the fields of each table, the enums, and the builders of the tables this writer
// writes. There is no flatc on the build machines and the schema has not changed
// since 3.0, so the few builder calls are written out here rather than generated.

// magic starts every FlatGeobuf file: "fgb", major version 3, "fgb", patch version 1,
// as GDAL 3.6 writes it.
var magic = [8]byte{0x66, 0x67, 0x62, 0x03, 0x66, 0x67, 0x62, 0x01}

// geometryType is FlatGeobuf's GeometryType enum (only the types orb has).
type geometryType uint8

const (
	typeUnknown            geometryType = 0
	typePoint              geometryType = 1
	typeLineString         geometryType = 2
	typePolygon            geometryType = 3
	typeMultiPoint         geometryType = 4
	typeMultiLineString    geometryType = 5
	typeMultiPolygon       geometryType = 6
	typeGeometryCollection geometryType = 7
)

// columnType is FlatGeobuf's ColumnType enum (only the types written).
type columnType uint8

const (
	colBool     columnType = 2
	colLong     columnType = 7
	colDouble   columnType = 10
	colString   columnType = 11
	colJSON     columnType = 12
	colDateTime columnType = 13
)

// Field numbers (vtable slots) of table Header.
const (
	headerName          = 0
	headerEnvelope      = 1
	headerGeometryType  = 2
	headerColumns       = 7
	headerFeaturesCount = 8
	headerIndexNodeSize = 9
	headerCrs           = 10
	headerTitle         = 11
	headerDescription   = 12
	headerFields        = 14
)

// Field numbers of table Column.
const (
	columnName     = 0
	columnTypeSlot = 1
	columnFields   = 11
)

// Field numbers of table Crs.
const (
	crsOrg    = 0
	crsCode   = 1
	crsFields = 6
)

// Field numbers of table Geometry.
const (
	geometryEnds     = 0
	geometryXY       = 1
	geometryTypeSlot = 6
	geometryParts    = 7
	geometryFields   = 8
)

// Field numbers of table Feature.
const (
	featureGeometry   = 0
	featureProperties = 1
	featureFields     = 3
)

// header is what the header of a file says.
type header struct {
	name, title, description string
	envelope                 *[4]float64 // nil: no feature has a geometry
	geometryType             geometryType
	columns                  []column
	featuresCount            uint64
	indexNodeSize            uint16 // 0: no index
	srid                     int    // > 0: EPSG code
}

// column is one column of the header.
type column struct {
	name string
	typ  columnType
}

// buildHeader returns the size-prefixed Header table h is.
func buildHeader(h header) []byte {
	b := flatbuffers.NewBuilder(1024)
	cols := make([]flatbuffers.UOffsetT, len(h.columns))
	for i, c := range h.columns {
		name := b.CreateString(c.name)
		b.StartObject(columnFields)
		b.PrependUOffsetTSlot(columnName, name, 0)
		b.PrependUint8Slot(columnTypeSlot, uint8(c.typ), 0)
		cols[i] = b.EndObject()
	}
	b.StartVector(4, len(cols), 4)
	for i := len(cols) - 1; i >= 0; i-- {
		b.PrependUOffsetT(cols[i])
	}
	colVec := b.EndVector(len(cols))
	var env, crs flatbuffers.UOffsetT
	if h.envelope != nil {
		b.StartVector(8, 4, 8)
		for i := 3; i >= 0; i-- {
			b.PrependFloat64(h.envelope[i])
		}
		env = b.EndVector(4)
	}
	if h.srid > 0 {
		org := b.CreateString("EPSG")
		b.StartObject(crsFields)
		b.PrependUOffsetTSlot(crsOrg, org, 0)
		b.PrependInt32Slot(crsCode, int32(h.srid), 0)
		crs = b.EndObject()
	}
	name, title, desc := b.CreateString(h.name), optString(b, h.title), optString(b, h.description)
	b.StartObject(headerFields)
	b.PrependUOffsetTSlot(headerName, name, 0)
	b.PrependUOffsetTSlot(headerEnvelope, env, 0)
	b.PrependUint8Slot(headerGeometryType, uint8(h.geometryType), 0)
	b.PrependUOffsetTSlot(headerColumns, colVec, 0)
	b.PrependUint64Slot(headerFeaturesCount, h.featuresCount, 0)
	b.PrependUint16Slot(headerIndexNodeSize, h.indexNodeSize, 16) // the schema's default is 16
	b.PrependUOffsetTSlot(headerCrs, crs, 0)
	b.PrependUOffsetTSlot(headerTitle, title, 0)
	b.PrependUOffsetTSlot(headerDescription, desc, 0)
	b.FinishSizePrefixed(b.EndObject())
	return b.FinishedBytes()
}

// optString is s in b, or 0 (the field left out) for "".
func optString(b *flatbuffers.Builder, s string) flatbuffers.UOffsetT {
	if s == "" {
		return 0
	}
	return b.CreateString(s)
}
