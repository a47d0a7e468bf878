package wfsserver

import (
	"math"
	"strconv"
	"time"
)

// Attribute describes one property of the feature type as DescribeFeatureType
// publishes it.
type Attribute struct {
	Name     string // element name, e.g. "Land-Use"
	XSDType  string // "string", "int", "long", "double", "decimal", "boolean", "date" or "dateTime"
	Nillable bool   // whether some parcels carry xsi:nil / JSON null
}

// geometryName is the geometry property's element name.
const geometryName = "geom"

// schema lists the non-geometry properties in document order. "Land-Use"
// (upper case and a dash) is there to exercise column-name laundering.
var schemaAttrs = [...]Attribute{
	{"parcel_id", "string", false},
	{"cadastre_no", "long", false},
	{"area_m2", "double", false},
	{"zone", "string", true},
	{"Land-Use", "string", true},
	{"owner_count", "int", true},
	{"assessed_value", "decimal", true},
	{"is_public", "boolean", false},
	{"surveyed", "date", true},
	{"updated_at", "dateTime", false},
}

// Zones include non-ASCII text and XML special characters on purpose.
var zones = [...]string{
	"Wohngebiet", "Mischgebiet", "Gewerbegebiet", "Grünfläche",
	"Straße & Weg", "<unbekannt>", "Kleingärten Süd-Ost", "Überschwemmungsgebiet \"HQ100\"",
}

var landUses = [...]string{"residential", "commercial", "industrial", "agricultural", "forest", "park", "mixed"}

var epochDay = time.Date(1990, 1, 1, 0, 0, 0, 0, time.UTC).Unix() / 86400

const updatedBase = 1577836800 // 2020-01-01T00:00:00Z

// editedBase is updated_at of an edit at revision 1, later than any revision-0 value.
const editedBase = 1735689600 // 2025-01-01T00:00:00Z

// The assessed value of an edited parcel rises by editedRaise cents per revision, from
// editedValue where it had none.
const (
	editedRaise = 100_000
	editedValue = 5_000_000
)

// attrs are one parcel's attribute values; negative means nil.
type attrs struct {
	i          int
	cadastre   int64
	area       float64
	zone       int // -1 nil, len(zones) empty string
	landUse    int
	owners     int
	valueCents int64
	public     bool
	surveyed   int64 // days since 1970-01-01
	updated    int64 // unix seconds
}

func (l *layout) attrs(i int, e edit, sh *shape) attrs {
	h := l.hash(i, 3)
	g := l.hash(i, 4)
	mLat := 110540.0
	mLon := 111320.0 * math.Cos((l.ext.Min[1]+l.ext.Max[1])/2*math.Pi/180)
	a := attrs{
		i:          i,
		cadastre:   4_000_000_000 + int64(i)*7 + int64(h%7),
		area:       math.Round(sh.areaDeg2()*mLat*mLon*100) / 100,
		zone:       int(h>>8) % len(zones),
		landUse:    int(g>>8) % len(landUses),
		owners:     1 + int(h>>16)%6,
		valueCents: 5_000_000 + int64(g>>20)%200_000_000,
		public:     (h>>24)%9 == 0,
		surveyed:   epochDay + int64(g>>32)%12000,
		updated:    updatedBase + int64(h>>32)%(5*365*86400),
	}
	switch {
	case h%97 == 0:
		a.zone = -1
	case h%89 == 0:
		a.zone = len(zones)
	}
	if g%53 == 0 {
		a.landUse = -1
	}
	if h%41 == 0 {
		a.owners = -1
	}
	if g%61 == 0 {
		a.valueCents = -1
	}
	if g%37 == 0 {
		a.surveyed = -1
	}
	if e.rev > 0 {
		if a.valueCents < 0 {
			a.valueCents = editedValue
		}
		a.valueCents += int64(e.rev) * editedRaise
		a.updated = editedBase + int64(e.rev-1)*86400
	}
	return a
}

func (a *attrs) zoneText() string {
	if a.zone == len(zones) {
		return ""
	}
	return zones[a.zone]
}

func appendParcelID(b []byte, i int) []byte {
	b = append(b, "GF-"...)
	var d [20]byte
	s := strconv.AppendInt(d[:0], int64(i), 10)
	for k := len(s); k < 8; k++ {
		b = append(b, '0')
	}
	return append(b, s...)
}

func appendDecimal(b []byte, cents int64) []byte {
	b = strconv.AppendInt(b, cents/100, 10)
	b = append(b, '.')
	c := cents % 100
	if c < 10 {
		b = append(b, '0')
	}
	return strconv.AppendInt(b, c, 10)
}

func appendDate(b []byte, day int64) []byte {
	return time.Unix(day*86400, 0).UTC().AppendFormat(b, time.DateOnly)
}

func appendDateTime(b []byte, sec int64) []byte {
	return time.Unix(sec, 0).UTC().AppendFormat(b, "2006-01-02T15:04:05Z")
}

// value returns attribute k of the schema as text; ok is false for nil.
func (a *attrs) appendValue(b []byte, k int) (out []byte, ok bool) {
	switch schemaAttrs[k].Name {
	case "parcel_id":
		return appendParcelID(b, a.i), true
	case "cadastre_no":
		return strconv.AppendInt(b, a.cadastre, 10), true
	case "area_m2":
		return strconv.AppendFloat(b, a.area, 'f', -1, 64), true
	case "zone":
		if a.zone < 0 {
			return b, false
		}
		return append(b, a.zoneText()...), true
	case "Land-Use":
		if a.landUse < 0 {
			return b, false
		}
		return append(b, landUses[a.landUse]...), true
	case "owner_count":
		if a.owners < 0 {
			return b, false
		}
		return strconv.AppendInt(b, int64(a.owners), 10), true
	case "assessed_value":
		if a.valueCents < 0 {
			return b, false
		}
		return appendDecimal(b, a.valueCents), true
	case "is_public":
		return strconv.AppendBool(b, a.public), true
	case "surveyed":
		if a.surveyed < 0 {
			return b, false
		}
		return appendDate(b, a.surveyed), true
	case "updated_at":
		return appendDateTime(b, a.updated), true
	}
	return b, false
}

// properties returns the typed values Feature exposes.
func (a *attrs) properties() map[string]any {
	m := make(map[string]any, len(schemaAttrs))
	for k, at := range schemaAttrs {
		txt, ok := a.appendValue(nil, k)
		if !ok {
			m[at.Name] = nil
			continue
		}
		switch at.XSDType {
		case "long", "int":
			v, _ := strconv.ParseInt(string(txt), 10, 64)
			m[at.Name] = v
		case "double":
			m[at.Name] = a.area
		case "boolean":
			m[at.Name] = a.public
		case "dateTime":
			m[at.Name] = time.Unix(a.updated, 0).UTC()
		default: // string, decimal and date keep their lexical form
			m[at.Name] = string(txt)
		}
	}
	return m
}

// jsonKind says how a property is written in GeoJSON.
func jsonQuoted(xsdType string) bool {
	switch xsdType {
	case "int", "long", "double", "decimal", "boolean":
		return false
	}
	return true
}
