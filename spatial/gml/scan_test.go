package gml

import (
	"errors"
	"io"
	"strings"
	"testing"
)

func TestTextByte(t *testing.T) {
	tests := []struct {
		name      string
		quote     int
		cdata     bool
		b0, b1, b byte
		want      textAction
	}{
		{name: "line end in character data", quote: -1, b0: 'a', b1: 'a', b: '\n', want: textData},
		{name: "non-ASCII byte", quote: -1, b0: 'a', b1: 'a', b: 0xc3, want: textData},
		{name: "lone > in character data", quote: -1, b0: 'a', b1: ']', b: '>', want: textData},
		{name: "< ends character data", quote: -1, b0: 'a', b1: 'a', b: '<', want: textEndBefore},
		{name: "& starts a reference", quote: -1, b0: 'a', b1: 'a', b: '&', want: textEntity},
		{name: "]]> outside CDATA", quote: -1, b0: ']', b1: ']', b: '>', want: textCDATAEndOutside},
		{name: "]]> closes CDATA", quote: -1, cdata: true, b0: ']', b1: ']', b: '>', want: textEndCDATA},
		{name: "< in CDATA", quote: -1, cdata: true, b0: 'a', b1: 'a', b: '<', want: textData},
		{name: "& in CDATA", quote: -1, cdata: true, b0: 'a', b1: 'a', b: '&', want: textData},
		{name: "closing double quote", quote: '"', b0: 'a', b1: 'a', b: '"', want: textEnd},
		{name: "other quote inside value", quote: '"', b0: 'a', b1: 'a', b: '\'', want: textData},
		{name: "closing single quote", quote: '\'', b0: 'a', b1: 'a', b: '\'', want: textEnd},
		{name: "< inside value", quote: '"', b0: 'a', b1: 'a', b: '<', want: textLessInQuotes},
		{name: "]]> inside value", quote: '"', b0: ']', b1: ']', b: '>', want: textData},
		{name: "& inside value", quote: '\'', b0: 'a', b1: 'a', b: '&', want: textEntity},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := textByte(tt.quote, tt.cdata, tt.b0, tt.b1, tt.b); got != tt.want {
				t.Errorf("textByte(%d, %v, %q, %q, %q) = %d, want %d", tt.quote, tt.cdata, tt.b0, tt.b1, tt.b, got, tt.want)
			}
		})
	}
}

func TestInvalidText(t *testing.T) {
	tests := []struct {
		name string
		data string
		want string
	}{
		{name: "empty", data: "", want: ""},
		{name: "ASCII with tab and line ends", data: "a\tb\r\nc", want: ""},
		{name: "UTF-8 letters", data: "Grüße €", want: ""},
		{name: "astral plane", data: "\U0001F600", want: ""},
		{name: "bad UTF-8", data: "ab\xffc", want: "invalid UTF-8"},
		{name: "truncated sequence", data: "ab\xc3", want: "invalid UTF-8"},
		{name: "control character", data: "a\x01b", want: "illegal character code U+0001"},
		{name: "FFFE", data: "a\uFFFE", want: "illegal character code U+FFFE"},
		{name: "first fault wins", data: "\x02\xff", want: "illegal character code U+0002"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := invalidText([]byte(tt.data)); got != tt.want {
				t.Errorf("invalidText(%q) = %q, want %q", tt.data, got, tt.want)
			}
		})
	}
}

func TestPredefinedEntity(t *testing.T) {
	tests := []struct {
		name   string
		entity string
		want   byte
		ok     bool
	}{
		{name: "lt", entity: "lt", want: '<', ok: true},
		{name: "gt", entity: "gt", want: '>', ok: true},
		{name: "amp", entity: "amp", want: '&', ok: true},
		{name: "apos", entity: "apos", want: '\'', ok: true},
		{name: "quot", entity: "quot", want: '"', ok: true},
		{name: "case matters", entity: "AMP", ok: false},
		{name: "HTML entity", entity: "nbsp", ok: false},
		{name: "empty", entity: "", ok: false},
		{name: "not a name", entity: "1lt", ok: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := predefinedEntity([]byte(tt.entity))
			if got != tt.want || ok != tt.ok {
				t.Errorf("predefinedEntity(%q) = %q, %v, want %q, %v", tt.entity, got, ok, tt.want, tt.ok)
			}
		})
	}
}

func TestIsRefDigit(t *testing.T) {
	tests := []struct {
		name string
		b    byte
		base int
		want bool
	}{
		{name: "decimal digit", b: '7', base: 10, want: true},
		{name: "hex letter in decimal", b: 'a', base: 10, want: false},
		{name: "hex digit", b: '9', base: 16, want: true},
		{name: "lower hex letter", b: 'f', base: 16, want: true},
		{name: "upper hex letter", b: 'F', base: 16, want: true},
		{name: "past f", b: 'g', base: 16, want: false},
		{name: "semicolon", b: ';', base: 16, want: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := isRefDigit(tt.b, tt.base); got != tt.want {
				t.Errorf("isRefDigit(%q, %d) = %v, want %v", tt.b, tt.base, got, tt.want)
			}
		})
	}
}

// TestScannerProductions reads one document per production of the scanner
// and checks the tokens' kinds (S start, E end, T text, C comment) and the
// error that ends the input, if any.
func TestScannerProductions(t *testing.T) {
	tests := []struct {
		name    string
		doc     string
		kinds   string
		wantErr string // substring; "" means a clean io.EOF
	}{
		{name: "start, text and end", doc: `<a x="1" y='2'>hi</a>`, kinds: "STE"},
		{name: "empty element", doc: `<a/>`, kinds: "SE"},
		{name: "end tag with space", doc: `<a></a >`, kinds: "SE"},
		{name: "end tag without name", doc: `<a></ >`, kinds: "S", wantErr: "expected element name after </"},
		{name: "junk in end tag", doc: `<a></a x>`, kinds: "S", wantErr: "invalid characters between </a and >"},
		{name: "start tag without name", doc: `< a>`, wantErr: "expected element name after <"},
		{name: "bad empty element", doc: `<a/ >`, wantErr: "expected /> in element"},
		{name: "attribute without name", doc: `<a ="1">`, wantErr: "expected attribute name in element"},
		{name: "attribute without =", doc: `<a x "1">`, wantErr: "attribute name without = in element"},
		{name: "unquoted attribute", doc: `<a x=1>`, wantErr: "unquoted or missing attribute value in element"},
		{name: "< in attribute", doc: `<a x="<">`, wantErr: "unescaped < inside quoted string"},
		{name: "EOF in start tag", doc: `<a x="1"`, wantErr: "unexpected EOF"},
		{name: "comment", doc: `<!-- c - d --><a/>`, kinds: "CSE"},
		{name: "double dash in comment", doc: `<!-- c -- d -->`, wantErr: `invalid sequence "--" not allowed in comments`},
		{name: "half comment open", doc: `<!-x>`, wantErr: "invalid sequence <!- not part of <!--"},
		{name: "CDATA", doc: `<a><![CDATA[x < y]]></a>`, kinds: "STE"},
		{name: "bad CDATA open", doc: `<![CDATX[x]]>`, wantErr: "invalid <![ sequence"},
		{name: "EOF in CDATA", doc: `<a><![CDATA[x`, kinds: "S", wantErr: "unexpected EOF in CDATA section"},
		{name: "]]> in text", doc: `<a>x]]></a>`, kinds: "S", wantErr: "unescaped ]]> not in CDATA section"},
		{name: "directive", doc: `<!DOCTYPE a [<!ELEMENT a ANY> <!-- x -- y --> '>']><a/>`, kinds: "CSE"},
		{name: "directive with nested markup", doc: `<!DOCTYPE a [<!ENTITY e "<>">]><a/>`, kinds: "CSE"},
		{name: "directive with <!-x", doc: `<!DOCTYPE a [<!-x>]><a/>`, kinds: "CSE"},
		{name: "EOF in directive", doc: `<!DOCTYPE a [`, wantErr: "unexpected EOF"},
		{name: "references", doc: `<a>&lt;&#65;&#x42;&quot;</a>`, kinds: "STE"},
		{name: "unknown entity", doc: `<a>&nbsp;</a>`, kinds: "S", wantErr: "invalid character entity &nbsp;"},
		{name: "entity without semicolon", doc: `<a>&amp </a>`, kinds: "S", wantErr: "invalid character entity &amp (no semicolon)"},
		{name: "character reference without semicolon", doc: `<a>&#x41 </a>`, kinds: "S", wantErr: "invalid character entity &#x41 (no semicolon)"},
		{name: "character reference out of range", doc: `<a>&#x110000;</a>`, kinds: "S", wantErr: "invalid character entity &#x110000;"},
		{name: "illegal character", doc: "<a>\x01</a>", kinds: "S", wantErr: "illegal character code U+0001"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newScanner(strings.NewReader(tt.doc), charsetReader)
			var kinds strings.Builder
			var err error
			for {
				var tok *token
				if tok, err = s.next(); err != nil {
					break
				}
				kinds.WriteByte(" SETC"[tok.kind])
			}
			if kinds.String() != tt.kinds {
				t.Errorf("kinds = %q, want %q", kinds.String(), tt.kinds)
			}
			switch {
			case tt.wantErr == "" && !errors.Is(err, io.EOF):
				t.Errorf("err = %v, want io.EOF", err)
			case tt.wantErr != "" && (err == io.EOF || !strings.Contains(err.Error(), tt.wantErr)):
				t.Errorf("err = %v, want one containing %q", err, tt.wantErr)
			}
		})
	}
}
