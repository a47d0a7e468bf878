// Command mapserver serves Debian's MapServer CGI (/usr/lib/cgi-bin/mapserv) over HTTP on
// the loopback interface, one mapserv process per request as Apache would run it, so that
// bench/mapserver/pgrestart.sh can harvest a real MapServer WFS without a web server.
// It prints the address it listens on (host:port) as the first line of stdout once it
// accepts connections, and serves until it is killed. With -access-log it writes one line
// per request: its start (Unix seconds), status, duration, client (geoflow, curl), what
// was asked and, for an answer that is an OGC exception (or a schema MapServer could not
// fill), its code and text, so that the benchmark can say what MapServer answered while
// its database was away.
//
//	go build -o /tmp/mscgi ./bench/mapserver
//	/tmp/mscgi -config /tmp/x/mapserver.conf -access-log /tmp/x/access.log   -> 127.0.0.1:41234
//	curl 'http://127.0.0.1:41234/mapserv?map=PARCELS&SERVICE=WFS&REQUEST=GetCapabilities'
package main

import (
	"bytes"
	"cmp"
	"errors"
	"flag"
	"fmt"
	"html"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/cgi"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"time"
)

func main() {
	listen := flag.String("listen", "127.0.0.1:0", "address to listen on (port 0: any free port); loopback only")
	mapserv := flag.String("mapserv", "/usr/lib/cgi-bin/mapserv", "the MapServer CGI binary")
	config := flag.String("config", "", "MapServer 8 config file, passed as MAPSERVER_CONFIG_FILE (required)")
	accessLog := flag.String("access-log", "", "write one line per request to this file")
	flag.Parse()
	if err := run(*listen, *mapserv, *config, *accessLog); err != nil {
		log.Fatalf("mapserver: %v", err)
	}
}

func run(listen, mapserv, config, accessLog string) error {
	if config == "" {
		return errors.New("-config is required: MapServer 8 refuses to serve without a config file")
	}
	config, err := filepath.Abs(config)
	if err != nil {
		return err
	}
	if _, err := os.Stat(mapserv); err != nil {
		return fmt.Errorf("the MapServer CGI: %w (install cgi-mapserver)", err)
	}
	host, _, err := net.SplitHostPort(listen)
	if err != nil {
		return fmt.Errorf("-listen %q: %w", listen, err)
	}
	if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
		return fmt.Errorf("-listen %q: only loopback addresses are allowed", listen)
	}
	var h http.Handler = &cgi.Handler{
		Path: mapserv,
		Root: "/mapserv",
		Dir:  filepath.Dir(config),
		Env:  []string{"MAPSERVER_CONFIG_FILE=" + config},
		// mapserv's own error log (MS_ERRORFILE "stderr") goes to ours.
		Stderr: os.Stderr,
		Logger: log.New(os.Stderr, "mapserver: ", log.LstdFlags),
	}
	if accessLog != "" {
		f, err := os.OpenFile(accessLog, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			return err
		}
		defer f.Close()
		h = &logged{next: h, w: f}
	}
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		return err
	}
	mux := http.NewServeMux()
	mux.Handle("/mapserv", h)
	mux.Handle("/mapserv/", h) // OGC API: /mapserv/{map alias}/ogcapi/...
	fmt.Println(ln.Addr().String())
	return http.Serve(ln, mux)
}

// logged writes an access log line per request.
type logged struct {
	next http.Handler
	mu   sync.Mutex
	w    io.Writer
}

func (l *logged) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	rec := &recorder{ResponseWriter: w, status: http.StatusOK}
	l.next.ServeHTTP(rec, r)
	line := fmt.Sprintf("%.3f %d %.3fs %s %s", float64(start.UnixMilli())/1e3, rec.status,
		time.Since(start).Seconds(), client(r), what(r))
	if s := problem(rec.head.Bytes()); s != "" {
		line += " | " + s
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	fmt.Fprintln(l.w, line)
}

// client names the client by the product in its User-Agent (geoflow, curl, GDAL).
func client(r *http.Request) string {
	ua, _, _ := strings.Cut(r.UserAgent(), "/")
	if f := strings.Fields(ua); len(f) > 0 {
		return f[0]
	}
	return "-"
}

// what names a request by its OGC parameters (case-insensitive, as MapServer reads them).
func what(r *http.Request) string {
	q := map[string]string{}
	for k, v := range r.URL.Query() {
		q[strings.ToUpper(k)] = strings.Join(v, ",")
	}
	if i := strings.Index(r.URL.Path, "/ogcapi"); i >= 0 {
		// OGC API - Features: the resource, and whether it asked for a count or a page.
		s := "ogcapi" + r.URL.Path[i+len("/ogcapi"):]
		switch {
		case q["LIMIT"] == "1":
			s += "/count"
		case q["OFFSET"] != "":
			s += "/paged"
		}
		return s
	}
	s := q["REQUEST"]
	if strings.EqualFold(q["RESULTTYPE"], "hits") {
		s += "/hits"
	}
	if q["STARTINDEX"] != "" {
		s += "/paged"
	}
	return s
}

// textMax is how much of an exception's text is logged.
const textMax = 200

// headSize is how much of each answer is kept to find an exception in.
const headSize = 4096

// recorder keeps the status and the head of the body.
type recorder struct {
	http.ResponseWriter
	status int
	head   bytes.Buffer
}

func (r *recorder) WriteHeader(code int) {
	r.status = code
	r.ResponseWriter.WriteHeader(code)
}

func (r *recorder) Write(b []byte) (int, error) {
	if n := headSize - r.head.Len(); n > 0 {
		r.head.Write(b[:min(n, len(b))])
	}
	return r.ResponseWriter.Write(b)
}

var (
	exceptionCode = regexp.MustCompile(`exceptionCode="([^"]*)"`)
	exceptionText = regexp.MustCompile(`(?s)<(?:ows:)?ExceptionText>(.*?)</`)
	serviceExc    = regexp.MustCompile(`(?s)<ServiceException[^>]*?(?:code="([^"]*)")?[^>]*>(.*?)</`)
	schemaError   = regexp.MustCompile(`<!-- ERROR: ([^>]*?) -->`)
)

// problem describes an exception report, or the error comment MapServer leaves in a
// DescribeFeatureType it answers 200 without the feature type; "" for anything else.
func problem(head []byte) string {
	first := func(s string) string {
		s = strings.Join(strings.Fields(html.UnescapeString(s)), " ")
		s, _, _ = strings.Cut(s, " Check server logs") // MapServer's advice that follows
		if r := []rune(s); len(r) > textMax {
			s = string(r[:textMax]) + "..."
		}
		return s
	}
	switch {
	case exceptionCode.Match(head):
		text := ""
		if m := exceptionText.FindSubmatch(head); m != nil {
			text = first(string(m[1]))
		}
		return fmt.Sprintf("exception %s: %s", exceptionCode.FindSubmatch(head)[1], text)
	case serviceExc.Match(head):
		m := serviceExc.FindSubmatch(head)
		return fmt.Sprintf("exception %s: %s", cmp.Or(string(m[1]), "(no code)"), first(string(m[2])))
	case schemaError.Match(head):
		return "schema without the feature type: " + string(schemaError.FindSubmatch(head)[1])
	}
	return ""
}
