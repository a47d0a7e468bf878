package imagery

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io"
	"mime"
	"net/http"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/paulmach/orb"

	"github.com/geoflow/geoflow/dlq"
	"github.com/geoflow/geoflow/internal/redact"
	"github.com/geoflow/geoflow/retry"
	"github.com/geoflow/geoflow/store"
	"github.com/geoflow/geoflow/tasks"
	"github.com/geoflow/geoflow/tasks/internal/files"
)

const (
	pagePrefix = "page/"
	itemPrefix = "item/"
	// maxPages stops a server whose next links never end.
	maxPages = 100_000
)

// pageSpec is the request of one search page.
type pageSpec struct {
	Method  string            `json:"method"`
	Href    string            `json:"href"`
	Body    json.RawMessage   `json:"body,omitempty"`
	Headers map[string]string `json:"headers,omitempty"`
}

// assetSpec is what an asset unit needs to download and record its file.
type assetSpec struct {
	Collection string          `json:"collection"`
	Item       string          `json:"item"`
	Asset      string          `json:"asset"`
	Href       string          `json:"href"`
	Type       string          `json:"type,omitempty"`
	Checksum   string          `json:"checksum,omitempty"`
	Size       int64           `json:"size,omitempty"`
	Datetime   *time.Time      `json:"datetime,omitempty"`
	Geometry   json.RawMessage `json:"geometry,omitempty"`
	Properties json.RawMessage `json:"properties,omitempty"`
}

// planSTAC plans the first search page; each page plans its items' assets and the next.
// The task's area must meet its collections' extent.
func (t *Task) planSTAC(ctx context.Context, env *tasks.Env, a orb.Bound) ([]store.Unit, error) {
	if err := t.stacAreaMeets(ctx, env, a); err != nil {
		return nil, err
	}
	if env.Area != nil {
		a = intersect(a, *env.Area)
	}
	s := t.cfg.STAC
	body := map[string]any{"bbox": []float64{a.Min[0], a.Min[1], a.Max[0], a.Max[1]}, "limit": s.Limit}
	if len(s.Collections) > 0 {
		body["collections"] = s.Collections
	}
	if s.Datetime != "" {
		body["datetime"] = s.Datetime
	}
	if len(s.Query) > 0 {
		body["query"] = s.Query
	}
	b, err := json.Marshal(body)
	if err != nil {
		return nil, fmt.Errorf("stac.query: %w", err)
	}
	sp, _ := json.Marshal(pageSpec{Method: http.MethodPost, Href: strings.TrimRight(s.URL, "/") + "/search", Body: b})
	return []store.Unit{{Key: pagePrefix + "0", BBox: &a, Spec: sp}}, nil
}

// executePage runs one search request and commits, as its children, a unit per wanted
// asset of each item and the next page.
func (t *Task) executePage(ctx context.Context, env *tasks.Env, u store.Unit) (*tasks.Output, error) {
	n, err := strconv.Atoi(strings.TrimPrefix(u.Key, pagePrefix))
	var sp pageSpec
	if err == nil {
		err = json.Unmarshal(u.Spec, &sp)
	}
	if err != nil || sp.Href == "" {
		return nil, retry.Permanent(dlq.ClassInvalid, fmt.Errorf("unit %s: bad spec %s", u.Key, u.Spec))
	}
	method := cmpOr(strings.ToUpper(sp.Method), http.MethodGet)
	var ic *ItemCollection
	var size int64
	req := retry.Request{
		Unit: env.TaskID + "/" + u.Key, Policy: env.Retry, RateLimit: env.RateLimit, Redirects: env.Redirects,
		Idempotent: true, // a search changes nothing on the server
		New: func(ctx context.Context) (*http.Request, error) {
			var body io.Reader
			if method == http.MethodPost {
				body = bytes.NewReader(sp.Body)
			}
			r, err := http.NewRequestWithContext(ctx, method, sp.Href, body)
			if err != nil {
				return nil, err
			}
			t.headers(r)
			for k, v := range sp.Headers {
				r.Header.Set(k, v)
			}
			if method == http.MethodPost {
				r.Header.Set("Content-Type", "application/json")
			}
			r.Header.Set("Accept", "application/geo+json, application/json;q=0.9")
			return r, nil
		},
	}
	err = env.HTTP.Do(ctx, req, func(resp *http.Response) error {
		if mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); strings.Contains(mt, "html") {
			b, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
			return retry.Transient(dlq.ClassParse, fmt.Errorf("the server answered an HTML page instead of items: %.200s", b))
		}
		cr := &countingReader{r: resp.Body}
		var err error
		if ic, err = ParseItemCollection(cr); err != nil {
			if errors.Is(err, io.ErrUnexpectedEOF) {
				return retry.Transient(dlq.ClassTruncated, err)
			}
			return retry.Permanent(dlq.ClassParse, err)
		}
		size = cr.n
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("searching %s (page %d): %w", redact.URL(sp.Href), n, err)
	}
	children := t.assetUnits(env, ic)
	if next := nextPage(ic, sp); next != nil {
		if n+1 >= maxPages {
			env.Logger.Warn("stopping after too many search pages", "pages", n+1)
		} else {
			b, _ := json.Marshal(next)
			children = append(children, store.Unit{Key: pagePrefix + strconv.Itoa(n+1), BBox: u.BBox, Spec: b})
		}
	}
	return &tasks.Output{Counts: store.Counts{Bytes: size}, Children: children}, nil
}

// assetUnits plans a unit per wanted asset of each item.
func (t *Task) assetUnits(env *tasks.Env, ic *ItemCollection) []store.Unit {
	var out []store.Unit
	for _, it := range ic.Features {
		var props struct {
			Datetime      *time.Time `json:"datetime"`
			StartDatetime *time.Time `json:"start_datetime"`
		}
		_ = json.Unmarshal(it.Properties, &props)
		dt := props.Datetime
		if dt == nil {
			dt = props.StartDatetime
		}
		b := itemBound(it)
		for _, key := range t.cfg.STAC.Assets {
			a, ok := it.Assets[key]
			if !ok || a.Href == "" {
				env.Logger.Debug("item has no such asset", "item", it.ID, "asset", key)
				continue
			}
			sp, _ := json.Marshal(assetSpec{Collection: it.Collection, Item: it.ID, Asset: key, Href: a.Href, Type: a.Type,
				Checksum: a.Checksum, Size: a.Size, Datetime: dt, Geometry: it.Geometry, Properties: it.Properties})
			u := store.Unit{Key: itemPrefix + url.PathEscape(it.Collection) + "/" + url.PathEscape(it.ID) + "/" + url.PathEscape(key), Spec: sp}
			if b != nil {
				bb := *b
				u.BBox = &bb
			}
			out = append(out, u)
		}
	}
	return out
}

// executeAsset downloads one asset with HTTP Range, so that a transfer cut off (in this
// attempt, or in a process that died) resumes from the byte where it stopped; checks it
// against the item's file:checksum and file:size; and commits it.
func (t *Task) executeAsset(ctx context.Context, env *tasks.Env, u store.Unit) (*tasks.Output, error) {
	var sp assetSpec
	if err := json.Unmarshal(u.Spec, &sp); err != nil || sp.Href == "" {
		return nil, retry.Permanent(dlq.ClassInvalid, fmt.Errorf("unit %s: bad spec %s", u.Key, u.Spec))
	}
	stored, err := env.Assets.LookupAsset(ctx, t.table, sp.Collection, sp.Item, sp.Asset)
	if err != nil {
		return nil, err
	}
	final := t.assetPath(sp)
	if verifiedHeld(stored, final, sp.Checksum) {
		// The item still names the content we verified and hold: nothing to fetch.
		return skipped(), nil
	}
	ifNoneMatch := "" // revalidate the file held, where the server gave it an ETag
	if holds(stored, final) {
		ifNoneMatch = stored.ETag
	}
	d := &download{part: final + ".part", meta: final + ".part.json"}
	if err := os.MkdirAll(filepath.Dir(final), 0o755); err != nil {
		return nil, store.DiskFault("creating the asset's directory", err)
	}
	resp, err := t.fetchAsset(ctx, env, u.Key, sp, d, ifNoneMatch)
	if err != nil {
		return nil, fmt.Errorf("downloading asset %s of item %s: %w", sp.Asset, sp.Item, err)
	}
	if resp.notModified {
		return skipped(), nil
	}
	size, sum, err := d.verify(sp)
	if err != nil {
		// A complete file with the wrong content: start again from nothing next time.
		os.Remove(d.part)
		os.Remove(d.meta)
		return nil, retry.Permanent(dlq.ClassParse, fmt.Errorf("asset %s of item %s: %w", sp.Asset, sp.Item, err))
	}
	row := store.AssetRow{Collection: sp.Collection, Item: sp.Item, Asset: sp.Asset, Footprint: footprint(sp.Geometry, u.BBox), Datetime: sp.Datetime,
		Properties: sp.Properties, Href: redact.URL(sp.Href), Path: final, Hash: sum, Checksum: sp.Checksum, Bytes: size,
		ContentType: assetContentType(resp.contentType, d.resumed, sp.Type), ETag: resp.etag, LastModified: resp.lastModified}
	out, err := t.fileOutput(row, stored, func() error {
		if err := os.Rename(d.part, final); err != nil {
			return err
		}
		os.Remove(d.meta)
		return files.SyncDir(filepath.Dir(final))
	})
	// An unchanged file is skipped: its fresh copy is not needed.
	os.Remove(d.part)
	os.Remove(d.meta)
	if out != nil {
		out.Counts.Bytes = d.received
	}
	return out, err
}

// holds tells whether the stored row's file is the one at final, and intact.
func holds(stored *store.StoredFile, final string) bool {
	return stored != nil && files.FileIntact(stored.Path, stored.Bytes) && stored.Path == final
}

// verifiedHeld decides that an asset need not be fetched at all: the file held is intact
// at its place, and the item's checksum still names the content that was verified.
// Without a checksum the server is asked (revalidated) instead.
func verifiedHeld(stored *store.StoredFile, final, checksum string) bool {
	if !holds(stored, final) || checksum == "" {
		return false
	}
	ok, _ := checksumMatches(checksum, stored.Hash, final)
	return ok
}

// assetResponse is what an asset's last response said of it.
type assetResponse struct {
	contentType, etag, lastModified string
	// notModified is a 304 to a revalidation: the file held is current.
	notModified bool
}

// fetchAsset downloads the asset into d's part file, resuming what an earlier attempt
// left there. With ifNoneMatch, a request from the first byte is conditional on it, and
// a 304 answers notModified; a 304 to a request that was not conditional is an error. An
// HTML page is no asset.
func (t *Task) fetchAsset(ctx context.Context, env *tasks.Env, key string, sp assetSpec, d *download, ifNoneMatch string) (assetResponse, error) {
	var ar assetResponse
	req := t.request(env, key, sp.Href, []int{http.StatusNotModified, http.StatusRequestedRangeNotSatisfiable}, func(r *http.Request) {
		d.prepare(r)
		if ifNoneMatch != "" && d.offset == 0 {
			r.Header.Set("If-None-Match", ifNoneMatch)
		}
	})
	err := env.HTTP.Do(ctx, req, func(resp *http.Response) error {
		ar.contentType, ar.etag, ar.lastModified = resp.Header.Get("Content-Type"), resp.Header.Get("ETag"), resp.Header.Get("Last-Modified")
		if resp.StatusCode == http.StatusNotModified {
			if ifNoneMatch == "" {
				return retry.Permanent(dlq.ClassHTTP4xx, errNotConditional)
			}
			ar.notModified = true
			return nil
		}
		if mt, _, _ := mime.ParseMediaType(ar.contentType); strings.Contains(mt, "html") {
			b, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
			return retry.Transient(dlq.ClassParse, fmt.Errorf("the server answered an HTML page instead of the asset: %.200s", b))
		}
		return d.receive(resp)
	})
	return ar, err
}

// assetContentType decides the content type recorded: the response's, unless it gave
// none or only continued a part file, when the item's (else the response's) holds.
func assetContentType(response string, resumed bool, item string) string {
	if response == "" || resumed {
		return cmpOr(item, response)
	}
	return response
}

// footprint is the item's geometry, else the unit's box; nil without either.
func footprint(geom json.RawMessage, bbox *orb.Bound) orb.Geometry {
	if g := geometry(geom); g != nil {
		return g
	}
	if bbox != nil {
		return boundPolygon(*bbox)
	}
	return nil
}

// assetPath is dir/collection/item/asset.ext, each part made safe as a file name.
func (t *Task) assetPath(sp assetSpec) string {
	safe := func(s string) string {
		s = strings.Map(func(r rune) rune {
			if r == '/' || r == '\\' || r == 0 || r == ':' {
				return '_'
			}
			return r
		}, s)
		if s == "" || s == "." || s == ".." {
			s = "_" + s
		}
		return s
	}
	ext := ""
	if pu, err := url.Parse(sp.Href); err == nil {
		ext = path.Ext(pu.Path)
	}
	if len(ext) > 8 || strings.ContainsAny(ext, "/\\") {
		ext = ""
	}
	return filepath.Join(t.cfg.Target.Dir, safe(cmpOr(sp.Collection, "_")), safe(sp.Item), safe(sp.Asset)+ext)
}

// download is one asset's transfer into its .part file.
type download struct {
	part, meta string
	offset     int64 // bytes in the part file when the attempt started
	resumed    bool  // the last response continued a part file
	received   int64 // bytes received over every attempt
	total      int64 // the file's size as the server says, -1 unknown
}

// partMeta is the validator of the part file's source, for If-Range.
type partMeta struct {
	ETag         string `json:"etag,omitempty"`
	LastModified string `json:"last_modified,omitempty"`
}

// prepare sets Range (and If-Range) for the bytes already in the part file.
func (d *download) prepare(r *http.Request) {
	d.offset = 0
	st, err := os.Stat(d.part)
	if err != nil || st.Size() == 0 {
		return
	}
	d.offset = st.Size()
	r.Header.Set("Range", fmt.Sprintf("bytes=%d-", d.offset))
	var m partMeta
	if b, err := os.ReadFile(d.meta); err == nil && json.Unmarshal(b, &m) == nil {
		// If-Range takes a strong ETag or a date: a changed file comes back whole.
		if m.ETag != "" && !strings.HasPrefix(m.ETag, "W/") {
			r.Header.Set("If-Range", m.ETag)
		} else if m.LastModified != "" {
			r.Header.Set("If-Range", m.LastModified)
		}
	}
}

// receive writes a 200 (whole file), 206 (the rest) or 416 (nothing left) response into
// the part file. A body cut off leaves what arrived in the part file, synced, and returns
// the read error, which the handler retries: the next attempt asks for the rest.
func (d *download) receive(resp *http.Response) error {
	d.total, d.resumed = -1, false
	var start int64
	switch resp.StatusCode {
	case http.StatusRequestedRangeNotSatisfiable:
		// Nothing after our offset: the part may hold the whole file already.
		if total, ok := rangeTotal(resp.Header.Get("Content-Range")); ok && total == d.offset {
			d.total = total
			return nil
		}
		os.Remove(d.part)
		return retry.Transient(dlq.ClassHTTP4xx, errors.New("416 for a partial file that does not match the server's: starting again"))
	case http.StatusPartialContent:
		s, total, ok := contentRange(resp.Header.Get("Content-Range"))
		if !ok || s != d.offset {
			os.Remove(d.part)
			return retry.Transient(dlq.ClassParse, fmt.Errorf("asked for bytes from %d, got Content-Range %q: starting again", d.offset, resp.Header.Get("Content-Range")))
		}
		start, d.total, d.resumed = s, total, true
	default: // 200: the whole file, the server ignoring or refusing the range
		if resp.ContentLength >= 0 {
			d.total = resp.ContentLength
		}
		m, _ := json.Marshal(partMeta{ETag: resp.Header.Get("ETag"), LastModified: resp.Header.Get("Last-Modified")})
		if err := files.WriteFileAtomic(d.meta, m); err != nil {
			return store.DiskFault("recording the partial download", err)
		}
	}
	flags := os.O_WRONLY | os.O_CREATE
	if start == 0 {
		flags |= os.O_TRUNC
	}
	f, err := os.OpenFile(d.part, flags, 0o644)
	if err != nil {
		return store.DiskFault("opening the partial download", err)
	}
	if _, err := f.Seek(start, io.SeekStart); err != nil {
		f.Close()
		return store.DiskFault("opening the partial download", err)
	}
	n, cerr := io.Copy(f, resp.Body)
	d.received += n
	serr := f.Sync()
	if err := f.Close(); serr == nil {
		serr = err
	}
	if cerr != nil {
		var pe *os.PathError
		if errors.As(cerr, &pe) {
			return store.DiskFault("writing the partial download", cerr) // the disk's, not the server's
		}
		return cerr // cut off: truncated, retried from the new offset
	}
	if serr != nil {
		return store.DiskFault("syncing the partial download", serr)
	}
	if d.total >= 0 && start+n != d.total {
		return retry.Transient(dlq.ClassTruncated, fmt.Errorf("%d of %d bytes", start+n, d.total))
	}
	return nil
}

// verify checks the part file against the item's size and checksum, and returns its size
// and sha-256.
func (d *download) verify(sp assetSpec) (int64, []byte, error) {
	f, err := os.Open(d.part)
	if err != nil {
		return 0, nil, err
	}
	defer f.Close()
	h := sha256.New()
	var other hash.Hash
	alg, want, known := parseMultihash(sp.Checksum)
	if known && alg != "sha2-256" {
		other = newHash(alg)
	}
	w := io.Writer(h)
	if other != nil {
		w = io.MultiWriter(h, other)
	}
	n, err := io.Copy(w, f)
	if err != nil {
		return 0, nil, err
	}
	sum := h.Sum(nil)
	if sp.Size > 0 && n != sp.Size {
		return 0, nil, fmt.Errorf("size mismatch: the item says %d bytes, the file has %d", sp.Size, n)
	}
	if known {
		got := sum
		if other != nil {
			got = other.Sum(nil)
		}
		if !bytes.Equal(got, want) {
			return 0, nil, fmt.Errorf("checksum mismatch: file:checksum is %s (%s), the file's is %x", sp.Checksum, alg, got)
		}
	}
	return n, sum, nil
}

type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}
