package gml

import (
	"bytes"
	"encoding/xml"
	"io"
	"testing"

	"github.com/geoflow/geoflow/spatial"
)

func BenchmarkReader(b *testing.B) {
	doc, err := io.ReadAll(newGen(10000))
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(doc)))
	b.ReportAllocs()
	for b.Loop() {
		readDoc(b, doc, 10000)
	}
}

// readDoc reads every feature of a WFS 2.0 document, failing b unless they are want.
func readDoc(b *testing.B, doc []byte, want int) {
	readCount(b, NewReader(bytes.NewReader(doc), Options{WFSVersion: "2.0.0"}), want)
}

// readCount reads every feature of r, failing b unless they are want.
func readCount(b *testing.B, r spatial.Reader, want int) {
	n := 0
	for {
		_, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			b.Fatal(err)
		}
		n++
	}
	if n != want {
		b.Fatalf("read %d features, want %d", n, want)
	}
}

// BenchmarkRawTokenBaseline is the ceiling set by encoding/xml: the same
// document read with RawToken and nothing else.
func BenchmarkRawTokenBaseline(b *testing.B) {
	doc, err := io.ReadAll(newGen(10000))
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(doc)))
	b.ReportAllocs()
	for b.Loop() {
		d := xml.NewDecoder(bytes.NewReader(doc))
		for {
			_, err := d.RawToken()
			if err == io.EOF {
				break
			}
			if err != nil {
				b.Fatal(err)
			}
		}
	}
}

// BenchmarkReferenceReader is BenchmarkReader for the reference reader on
// encoding/xml's RawToken (reader_ref_test.go), the Reader before scan.go.
func BenchmarkReferenceReader(b *testing.B) {
	doc, err := io.ReadAll(newGen(10000))
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(doc)))
	b.ReportAllocs()
	for b.Loop() {
		readCount(b, newRefReader(bytes.NewReader(doc), Options{WFSVersion: "2.0.0"}), 10000)
	}
}

// BenchmarkScanner is the scanner alone on BenchmarkReader's document: the
// tokenizer's share of the Reader's time, where a slower hot loop shows
// first.
func BenchmarkScanner(b *testing.B) {
	doc, err := io.ReadAll(newGen(10000))
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(doc)))
	b.ReportAllocs()
	for b.Loop() {
		s := newScanner(bytes.NewReader(doc), charsetReader)
		for {
			_, err := s.next()
			if err == io.EOF {
				break
			}
			if err != nil {
				b.Fatal(err)
			}
		}
	}
}

// BenchmarkScannerText is the scanner on character data that leaves its
// bulk copy: line ends, non-ASCII letters, entity and character references,
// attribute values and CDATA.
func BenchmarkScannerText(b *testing.B) {
	var doc bytes.Buffer
	doc.WriteString("<root>\n")
	for i := 0; i < 20000; i++ {
		doc.WriteString("<a k=\"Straße &amp; Weg\">Grüße aus Köln &amp; Umgebung,\r\n  Nr. &#228;&#x20AC; &lt;5&gt;</a>\n<b><![CDATA[x < y ]] z]]></b><!-- note -->\n")
	}
	doc.WriteString("</root>\n")
	b.SetBytes(int64(doc.Len()))
	b.ReportAllocs()
	for b.Loop() {
		s := newScanner(bytes.NewReader(doc.Bytes()), charsetReader)
		for {
			_, err := s.next()
			if err == io.EOF {
				break
			}
			if err != nil {
				b.Fatal(err)
			}
		}
	}
}
