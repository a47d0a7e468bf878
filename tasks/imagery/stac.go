package imagery

import (
	"bytes"
	"context"
	"crypto/md5"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/hex"
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
	"github.com/geoflow/geoflow/spatial/geojson"
	"github.com/geoflow/geoflow/tasks"
	"github.com/geoflow/geoflow/tasks/tiles"
)

const (
	pagePrefix = "page/"
	itemPrefix = "item/"
	// maxPages stops a server whose next links never end.
	maxPages = 100_000
)

// ItemCollection is the part of a STAC search response (a GeoJSON FeatureCollection of
// items) that the task reads.
type ItemCollection struct {
	Type     string `json:"type"`
	Features []Item `json:"features"`
	Links    []Link `json:"links"`
}

// Item is a STAC item.
type Item struct {
	ID         string           `json:"id"`
	Collection string           `json:"collection"`
	Geometry   json.RawMessage  `json:"geometry"`
	BBox       []float64        `json:"bbox"`
	Properties json.RawMessage  `json:"properties"`
	Assets     map[string]Asset `json:"assets"`
}

// Asset is one file of an item.
type Asset struct {
	Href     string `json:"href"`
	Type     string `json:"type"`
	Checksum string `json:"file:checksum"`
	Size     int64  `json:"file:size"`
}

// Link is a STAC link; a search's next link may be a POST with a body to send (merged
// into the previous body when Merge is set), as the STAC API's item search specifies.
type Link struct {
	Rel     string            `json:"rel"`
	Href    string            `json:"href"`
	Method  string            `json:"method"`
	Body    json.RawMessage   `json:"body"`
	Merge   bool              `json:"merge"`
	Headers map[string]string `json:"headers"`
}

// ParseItemCollection decodes a search response, refusing what is not a
// FeatureCollection of items with ids.
func ParseItemCollection(r io.Reader) (*ItemCollection, error) {
	var ic ItemCollection
	if err := json.NewDecoder(io.LimitReader(r, 64<<20)).Decode(&ic); err != nil {
		return nil, fmt.Errorf("not a STAC item collection: %w", err)
	}
	if ic.Type != "FeatureCollection" {
		return nil, fmt.Errorf("not a STAC item collection: type %q", ic.Type)
	}
	for i, it := range ic.Features {
		if it.ID == "" {
			return nil, fmt.Errorf("item %d has no id", i)
		}
		if len(it.BBox) != 0 && len(it.BBox) != 4 && len(it.BBox) != 6 {
			return nil, fmt.Errorf("item %q: bbox has %d values", it.ID, len(it.BBox))
		}
	}
	return &ic, nil
}

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
func (t *Task) planSTAC(env *tasks.Env, a orb.Bound) ([]tasks.Unit, error) {
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
	return []tasks.Unit{{Key: pagePrefix + "0", BBox: &a, Spec: sp}}, nil
}

// executePage runs one search request and commits, as its children, a unit per wanted
// asset of each item and the next page.
func (t *Task) executePage(ctx context.Context, env *tasks.Env, u tasks.Unit) (tasks.Result, error) {
	n, err := strconv.Atoi(strings.TrimPrefix(u.Key, pagePrefix))
	var sp pageSpec
	if err == nil {
		err = json.Unmarshal(u.Spec, &sp)
	}
	if err != nil || sp.Href == "" {
		return tasks.Result{}, retry.Permanent(dlq.ClassInvalid, fmt.Errorf("unit %s: bad spec %s", u.Key, u.Spec))
	}
	method := cmpOr(strings.ToUpper(sp.Method), http.MethodGet)
	var ic *ItemCollection
	var size int64
	req := retry.Request{
		Unit: env.TaskID + "/" + u.Key, Policy: env.Retry, RateLimit: env.RateLimit,
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
		return tasks.Result{}, fmt.Errorf("searching %s (page %d): %w", redact.URL(sp.Href), n, err)
	}
	children := t.assetUnits(env, ic)
	if next := nextPage(ic, sp); next != nil {
		if n+1 >= maxPages {
			env.Logger.Warn("stopping after too many search pages", "pages", n+1)
		} else {
			b, _ := json.Marshal(next)
			children = append(children, tasks.Unit{Key: pagePrefix + strconv.Itoa(n+1), BBox: u.BBox, Spec: b})
		}
	}
	res, err := env.Store.CommitUnit(ctx, ref(env, u), func(context.Context, tasks.Tx) (tasks.Result, error) {
		return tasks.Result{Bytes: size, Children: children}, nil
	})
	if err != nil {
		return res, retry.Permanent(dlq.ClassDatabase, err)
	}
	return res, nil
}

// nextPage returns the request of the page after cur, or nil at the end.
func nextPage(ic *ItemCollection, cur pageSpec) *pageSpec {
	if len(ic.Features) == 0 {
		return nil // a next link on an empty page would loop
	}
	for _, l := range ic.Links {
		if l.Rel != "next" || l.Href == "" {
			continue
		}
		next := &pageSpec{Method: cmpOr(strings.ToUpper(l.Method), http.MethodGet), Href: l.Href, Headers: l.Headers}
		if base, err := url.Parse(cur.Href); err == nil {
			if h, err := base.Parse(l.Href); err == nil {
				next.Href = h.String()
			}
		}
		if next.Method == http.MethodPost {
			next.Body = l.Body
			if l.Merge {
				next.Body = mergeJSON(cur.Body, l.Body)
			}
		}
		if next.Method == cur.Method && next.Href == cur.Href && bytes.Equal(next.Body, cur.Body) {
			return nil // the same request again: the server's paging is broken
		}
		return next
	}
	return nil
}

// mergeJSON overlays the members of b onto a (both JSON objects).
func mergeJSON(a, b json.RawMessage) json.RawMessage {
	m := map[string]json.RawMessage{}
	_ = json.Unmarshal(a, &m)
	var o map[string]json.RawMessage
	if json.Unmarshal(b, &o) == nil {
		for k, v := range o {
			m[k] = v
		}
	}
	out, _ := json.Marshal(m)
	return out
}

// assetUnits plans a unit per wanted asset of each item.
func (t *Task) assetUnits(env *tasks.Env, ic *ItemCollection) []tasks.Unit {
	var out []tasks.Unit
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
			u := tasks.Unit{Key: itemPrefix + url.PathEscape(it.Collection) + "/" + url.PathEscape(it.ID) + "/" + url.PathEscape(key), Spec: sp}
			if b != nil {
				bb := *b
				u.BBox = &bb
			}
			out = append(out, u)
		}
	}
	return out
}

func itemBound(it Item) *orb.Bound {
	switch len(it.BBox) {
	case 4:
		return &orb.Bound{Min: orb.Point{it.BBox[0], it.BBox[1]}, Max: orb.Point{it.BBox[2], it.BBox[3]}}
	case 6:
		return &orb.Bound{Min: orb.Point{it.BBox[0], it.BBox[1]}, Max: orb.Point{it.BBox[3], it.BBox[4]}}
	}
	if g := geometry(it.Geometry); g != nil {
		b := g.Bound()
		return &b
	}
	return nil
}

// geometry decodes an item's GeoJSON geometry; nil when it has none or it is invalid.
func geometry(raw json.RawMessage) orb.Geometry {
	if len(raw) == 0 || string(raw) == "null" {
		return nil
	}
	doc := append(append([]byte(`{"type":"Feature","properties":{},"geometry":`), raw...), '}')
	f, err := geojson.NewReader(bytes.NewReader(doc), geojson.Options{}).Next()
	if err != nil || f == nil {
		return nil
	}
	return f.Geometry
}

// executeAsset downloads one asset with HTTP Range, so that a transfer cut off (in this
// attempt, or in a process that died) resumes from the byte where it stopped; checks it
// against the item's file:checksum and file:size; and commits it.
func (t *Task) executeAsset(ctx context.Context, env *tasks.Env, u tasks.Unit) (tasks.Result, error) {
	var sp assetSpec
	if err := json.Unmarshal(u.Spec, &sp); err != nil || sp.Href == "" {
		return tasks.Result{}, retry.Permanent(dlq.ClassInvalid, fmt.Errorf("unit %s: bad spec %s", u.Key, u.Spec))
	}
	stored, err := env.Store.LookupAsset(ctx, t.table, sp.Collection, sp.Item, sp.Asset)
	if err != nil {
		return tasks.Result{}, retry.Permanent(dlq.ClassDatabase, err)
	}
	final := t.assetPath(sp)
	if stored != nil && tiles.FileIntact(stored.Path, stored.Bytes) && stored.Path == final && sp.Checksum != "" {
		if ok, _ := checksumMatches(sp.Checksum, stored.Hash, final); ok {
			// The item still names the content we verified and hold: nothing to fetch.
			return commitSkipped(ctx, env, u)
		}
	}
	revalidate := stored != nil && stored.ETag != "" && stored.Path == final && tiles.FileIntact(stored.Path, stored.Bytes)
	d := &download{part: final + ".part", meta: final + ".part.json"}
	if err := os.MkdirAll(filepath.Dir(final), 0o755); err != nil {
		return tasks.Result{}, retry.Permanent(dlq.ClassDatabase, err)
	}
	var ct, etag, lastMod string
	notModified := false
	req := t.request(env, u.Key, sp.Href, []int{http.StatusNotModified, http.StatusRequestedRangeNotSatisfiable}, func(r *http.Request) {
		d.prepare(r)
		if revalidate && d.offset == 0 {
			r.Header.Set("If-None-Match", stored.ETag)
		}
	})
	err = env.HTTP.Do(ctx, req, func(resp *http.Response) error {
		ct, etag, lastMod = resp.Header.Get("Content-Type"), resp.Header.Get("ETag"), resp.Header.Get("Last-Modified")
		if resp.StatusCode == http.StatusNotModified {
			if !revalidate {
				return retry.Permanent(dlq.ClassHTTP4xx, errNotConditional)
			}
			notModified = true
			return nil
		}
		if mt, _, _ := mime.ParseMediaType(ct); strings.Contains(mt, "html") {
			b, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
			return retry.Transient(dlq.ClassParse, fmt.Errorf("the server answered an HTML page instead of the asset: %.200s", b))
		}
		return d.receive(resp)
	})
	if err != nil {
		return tasks.Result{}, fmt.Errorf("downloading asset %s of item %s: %w", sp.Asset, sp.Item, err)
	}
	if notModified {
		return commitSkipped(ctx, env, u)
	}
	size, sum, err := d.verify(sp)
	if err != nil {
		// A complete file with the wrong content: start again from nothing next time.
		os.Remove(d.part)
		os.Remove(d.meta)
		return tasks.Result{}, retry.Permanent(dlq.ClassParse, fmt.Errorf("asset %s of item %s: %w", sp.Asset, sp.Item, err))
	}
	if ct == "" || d.resumed {
		ct = cmpOr(sp.Type, ct)
	}
	var fp orb.Geometry
	if g := geometry(sp.Geometry); g != nil {
		fp = g
	} else if u.BBox != nil {
		fp = boundPolygon(*u.BBox)
	}
	row := tasks.AssetRow{Collection: sp.Collection, Item: sp.Item, Asset: sp.Asset, Footprint: fp, Datetime: sp.Datetime,
		Properties: sp.Properties, Href: redact.URL(sp.Href), Path: final, Hash: sum, Checksum: sp.Checksum, Bytes: size,
		ContentType: ct, ETag: etag, LastModified: lastMod}
	res, err := t.commitFile(ctx, env, u, row, stored, func() error {
		if err := os.Rename(d.part, final); err != nil {
			return err
		}
		os.Remove(d.meta)
		return tiles.SyncDir(filepath.Dir(final))
	})
	// An unchanged file is skipped: its fresh copy is not needed.
	os.Remove(d.part)
	os.Remove(d.meta)
	res.Bytes = d.received
	return res, err
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
		if err := tiles.WriteFileAtomic(d.meta, m); err != nil {
			return retry.Permanent(dlq.ClassDatabase, err)
		}
	}
	flags := os.O_WRONLY | os.O_CREATE
	if start == 0 {
		flags |= os.O_TRUNC
	}
	f, err := os.OpenFile(d.part, flags, 0o644)
	if err != nil {
		return retry.Permanent(dlq.ClassDatabase, err)
	}
	if _, err := f.Seek(start, io.SeekStart); err != nil {
		f.Close()
		return retry.Permanent(dlq.ClassDatabase, err)
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
			return retry.Permanent(dlq.ClassDatabase, cerr)
		}
		return cerr // cut off: truncated, retried from the new offset
	}
	if serr != nil {
		return retry.Permanent(dlq.ClassDatabase, serr)
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

// checksumMatches tells whether a stored file still has the content checksum names.
func checksumMatches(checksum string, sha256sum []byte, path string) (bool, error) {
	alg, want, known := parseMultihash(checksum)
	if !known {
		return false, nil
	}
	if alg == "sha2-256" {
		return bytes.Equal(sha256sum, want), nil
	}
	f, err := os.Open(path)
	if err != nil {
		return false, err
	}
	defer f.Close()
	h := newHash(alg)
	if _, err := io.Copy(h, f); err != nil {
		return false, err
	}
	return bytes.Equal(h.Sum(nil), want), nil
}

// parseMultihash reads a hex multihash (file:checksum): 1220 sha2-256, 1340 sha2-512,
// 1114 sha1, d50110 md5. known is false for other algorithms and malformed values.
func parseMultihash(s string) (alg string, digest []byte, known bool) {
	b, err := hex.DecodeString(strings.TrimSpace(s))
	if err != nil || len(b) < 3 {
		return "", nil, false
	}
	var code uint64
	var shift uint
	i := 0
	for ; i < len(b) && i < 4; i++ {
		code |= uint64(b[i]&0x7f) << shift
		shift += 7
		if b[i]&0x80 == 0 {
			i++
			break
		}
	}
	if i >= len(b) {
		return "", nil, false
	}
	length := int(b[i])
	digest = b[i+1:]
	if len(digest) != length {
		return "", nil, false
	}
	switch {
	case code == 0x12 && length == 32:
		return "sha2-256", digest, true
	case code == 0x13 && length == 64:
		return "sha2-512", digest, true
	case code == 0x11 && length == 20:
		return "sha1", digest, true
	case code == 0xd5 && length == 16:
		return "md5", digest, true
	}
	return "", nil, false
}

func newHash(alg string) hash.Hash {
	switch alg {
	case "sha2-512":
		return sha512.New()
	case "sha1":
		return sha1.New()
	case "md5":
		return md5.New()
	}
	return sha256.New()
}

// contentRange parses "bytes start-end/total" (total may be "*", giving -1).
func contentRange(s string) (start, total int64, ok bool) {
	rest, found := strings.CutPrefix(strings.TrimSpace(s), "bytes ")
	if !found {
		return 0, 0, false
	}
	span, tot, found := strings.Cut(rest, "/")
	if !found {
		return 0, 0, false
	}
	a, _, found := strings.Cut(span, "-")
	if !found {
		return 0, 0, false
	}
	start, err := strconv.ParseInt(a, 10, 64)
	if err != nil || start < 0 {
		return 0, 0, false
	}
	total = -1
	if tot != "*" {
		if total, err = strconv.ParseInt(tot, 10, 64); err != nil {
			return 0, 0, false
		}
	}
	return start, total, true
}

// rangeTotal parses the "bytes */total" of a 416.
func rangeTotal(s string) (int64, bool) {
	rest, ok := strings.CutPrefix(strings.TrimSpace(s), "bytes */")
	if !ok {
		return 0, false
	}
	n, err := strconv.ParseInt(rest, 10, 64)
	return n, err == nil
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
