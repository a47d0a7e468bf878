package server

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"io/fs"
	"mime"
	"net/http"
	"path"
	"strings"
)

//go:embed web/templates web/static
var webFS embed.FS

// asset is one embedded static file, held as it is and gzipped.
type asset struct {
	body, gz []byte
	ctype    string
}

// assets serves the embedded static files under /static/<version>/, where version is a
// hash of them all: a new build gets new URLs, so every file can be cached for good.
type assets struct {
	version string
	files   map[string]*asset
}

func loadAssets() (*assets, error) {
	a := &assets{files: map[string]*asset{}}
	sum := sha256.New()
	err := fs.WalkDir(webFS, "web/static", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		body, err := webFS.ReadFile(p)
		if err != nil {
			return err
		}
		name := strings.TrimPrefix(p, "web/static/")
		sum.Write([]byte(name))
		sum.Write(body)
		ct := mime.TypeByExtension(path.Ext(name))
		switch path.Ext(name) {
		case ".mjs", ".js":
			ct = "text/javascript; charset=utf-8"
		case ".css":
			ct = "text/css; charset=utf-8"
		case "":
			ct = "text/plain; charset=utf-8"
		}
		f := &asset{body: body, ctype: ct}
		if strings.HasPrefix(ct, "text/") || strings.Contains(ct, "svg") {
			var b bytes.Buffer
			zw, _ := gzip.NewWriterLevel(&b, gzip.BestCompression)
			zw.Write(body)
			zw.Close()
			if b.Len() < len(body) {
				f.gz = b.Bytes()
			}
		}
		a.files[name] = f
		return nil
	})
	a.version = hex.EncodeToString(sum.Sum(nil))[:12]
	return a, err
}

// url is the versioned URL of the static file name ("app.js").
func (a *assets) url(name string) string { return "/static/" + a.version + "/" + name }

func (a *assets) serve(w http.ResponseWriter, r *http.Request) {
	version, name, _ := strings.Cut(strings.TrimPrefix(r.URL.Path, "/static/"), "/")
	f, ok := a.files[name]
	if !ok {
		http.NotFound(w, r)
		return
	}
	h := w.Header()
	h.Set("Content-Type", f.ctype)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Add("Vary", "Accept-Encoding")
	if version == a.version {
		h.Set("Cache-Control", "public, max-age=31536000, immutable")
	} else {
		h.Set("Cache-Control", "no-cache") // an old page's URL: serve what there is now
	}
	body := f.body
	if f.gz != nil && strings.Contains(r.Header.Get("Accept-Encoding"), "gzip") {
		h.Set("Content-Encoding", "gzip")
		body = f.gz
	}
	if r.Method == http.MethodHead {
		return
	}
	w.Write(body)
}

// contentSecurity is the policy of every page: scripts, styles, workers and data only
// from geoflow itself, so that text from a server that slipped through escaping still
// could not run.
const contentSecurity = "default-src 'self'; script-src 'self'; worker-src 'self' blob:; style-src 'self'; " +
	"img-src 'self' data: blob:; connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
