package flows

import (
	"encoding"
	"fmt"
	"math"
	"net/url"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/geoflow/geoflow/internal/didyoumean"
	"github.com/geoflow/geoflow/internal/redact"
	"github.com/goccy/go-yaml/ast"
)

// decoder fills Go values from a YAML AST, collecting every problem with its position
// instead of stopping at the first, which is what goccy/go-yaml's own decoder does.
type decoder struct {
	file     string
	problems []Problem
	lookup   func(string) (string, bool) // environment
	// keys records the position of every mapping key by its dotted path, so that rules
	// checked after decoding can still point at the line they concern.
	keys map[string]ast.Node
	// path is the dotted path of the value being decoded; secrets collects the values
	// the environment gave to a URL or a header, which logs and dead letters mask.
	path    string
	secrets []string
}

func (d *decoder) errorf(n ast.Node, format string, args ...any) {
	p := Problem{File: d.file, Msg: fmt.Sprintf(format, args...)}
	if n != nil {
		if tk := n.GetToken(); tk != nil && tk.Position != nil {
			p.Line, p.Col = tk.Position.Line, tk.Position.Column
		}
	}
	d.problems = append(d.problems, p)
}

var (
	durationType = reflect.TypeOf(time.Duration(0))
	deferredType = reflect.TypeOf(deferred{})
)

// deferred marks a key whose value is decoded elsewhere.
type deferred struct{}

// unwrap strips anchors and tags, which carry no meaning for a flow.
func unwrap(n ast.Node) ast.Node {
	for {
		switch v := n.(type) {
		case *ast.AnchorNode:
			n = v.Value
		case *ast.TagNode:
			n = v.Value
		case *ast.CommentGroupNode:
			return nil
		default:
			return n
		}
	}
}

// mappingOf returns the key/value pairs of a mapping node, or ok=false.
func mappingOf(n ast.Node) ([]*ast.MappingValueNode, bool) {
	switch v := n.(type) {
	case *ast.MappingNode:
		return v.Values, true
	case *ast.MappingValueNode:
		return []*ast.MappingValueNode{v}, true
	}
	return nil, false
}

func keyString(kv *ast.MappingValueNode) string {
	if k, ok := unwrap(kv.Key).(ast.ScalarNode); ok {
		return fmt.Sprint(k.GetValue())
	}
	return kv.Key.String()
}

// field is one settable struct field with its YAML key.
type field struct {
	name  string
	value reflect.Value
	enum  []string
}

// structFields lists the yaml-tagged fields of the structs in targets, in order.
func structFields(targets ...reflect.Value) []field {
	var out []field
	for _, t := range targets {
		t = reflect.Indirect(t)
		for i := 0; i < t.NumField(); i++ {
			sf := t.Type().Field(i)
			tag, ok := sf.Tag.Lookup("yaml")
			if !ok || tag == "-" || !sf.IsExported() {
				continue
			}
			f := field{name: strings.Split(tag, ",")[0], value: t.Field(i)}
			if e := sf.Tag.Get("enum"); e != "" {
				f.enum = strings.Split(e, ",")
			}
			out = append(out, f)
		}
	}
	return out
}

// decodeStruct decodes mapping n into the fields of targets (pointers to structs), which
// share one key space: a task's common keys and its kind's keys. what names the mapping
// in messages ("task \"parcels\"").
func (d *decoder) decodeStruct(n ast.Node, path, what string, targets ...reflect.Value) {
	pairs, ok := mappingOf(unwrap(n))
	if !ok {
		if _, null := unwrap(n).(*ast.NullNode); null || unwrap(n) == nil {
			return
		}
		d.errorf(n, "%s must be a mapping of keys to values, not %s", what, describe(n))
		return
	}
	fields := structFields(targets...)
	seen := map[string]bool{}
	for _, kv := range pairs {
		key := keyString(kv)
		if seen[key] {
			d.errorf(kv.Key, "duplicate key %q in %s", key, what)
			continue
		}
		seen[key] = true
		d.keys[join(path, key)] = kv.Key
		var f *field
		for i := range fields {
			if fields[i].name == key {
				f = &fields[i]
				break
			}
		}
		if f == nil {
			names := make([]string, len(fields))
			for i, f := range fields {
				names[i] = f.name
			}
			msg := fmt.Sprintf("unknown key %q in %s", key, what)
			if s := suggest(key, names); s != "" {
				msg += fmt.Sprintf(" (did you mean %q?)", s)
			}
			d.errorf(kv.Key, "%s", msg)
			continue
		}
		label := key
		if strings.HasPrefix(what, "task ") {
			label = what + ": " + key
		}
		d.decodeValue(kv.Value, f.value, join(path, key), label, f.enum)
	}
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// decodeValue decodes n into v. key names the value in messages.
func (d *decoder) decodeValue(n ast.Node, v reflect.Value, path, key string, enum []string) {
	d.path = path
	n = unwrap(n)
	if n == nil {
		return
	}
	if _, null := n.(*ast.NullNode); null {
		return // keep the default
	}
	if alias, ok := n.(*ast.AliasNode); ok {
		d.errorf(alias, "%s: YAML aliases are not supported in flows", key)
		return
	}
	switch {
	case v.Type() == deferredType:
		return
	case v.Kind() == reflect.Pointer:
		d.decodePointer(n, v, path, key, enum)
		return
	}
	if v.CanAddr() {
		if pm, ok := v.Addr().Interface().(pairAdder); ok {
			d.decodePairs(n, pm, path, key)
			return
		}
		if tu, ok := v.Addr().Interface().(encoding.TextUnmarshaler); ok {
			if s, ok := d.scalar(n, key); ok {
				if err := tu.UnmarshalText([]byte(s)); err != nil {
					d.errorf(n, "%s: %v", key, err)
				}
			}
			return
		}
	}
	switch v.Kind() {
	case reflect.String, reflect.Bool, reflect.Int, reflect.Int64, reflect.Int32, reflect.Float64:
		if s, ok := d.scalar(n, key); ok {
			if msg := setScalar(v, s, key, enum); msg != "" {
				d.errorf(n, "%s", msg)
			}
		}
	case reflect.Slice, reflect.Array:
		d.decodeList(n, v, path, key, enum)
	case reflect.Struct:
		d.decodeStruct(n, path, key, v.Addr())
	case reflect.Interface:
		if v.NumMethod() == 0 {
			v.Set(reflect.ValueOf(d.generic(n, key)))
			return
		}
		d.errorf(n, "%s: unsupported value", key)
	case reflect.Map:
		d.decodeMap(n, v, path, key)
	default:
		d.errorf(n, "%s: unsupported value", key)
	}
}

// decodePointer decodes n into a fresh value and keeps it only if it decoded cleanly, so
// that a bad value reads as "not set" to the checks that follow instead of as zero.
func (d *decoder) decodePointer(n ast.Node, v reflect.Value, path, key string, enum []string) {
	fresh := reflect.New(v.Type().Elem())
	if !v.IsNil() {
		fresh.Elem().Set(v.Elem())
	}
	before := len(d.problems)
	d.decodeValue(n, fresh.Elem(), path, key, enum)
	if len(d.problems) == before {
		v.Set(fresh)
	}
}

// setScalar sets v, a string, bool, whole number, number or duration, from the YAML
// scalar s, or returns why s is not one (the message names key); enum, when set, lists
// the strings allowed.
func setScalar(v reflect.Value, s, key string, enum []string) string {
	if v.Type() == durationType {
		dur, err := time.ParseDuration(s)
		switch {
		case err == nil && dur < 0:
			return fmt.Sprintf("%s: duration %s must not be negative", key, s)
		case err == nil:
			v.SetInt(int64(dur))
			return ""
		}
		if _, num := strconv.ParseFloat(s, 64); num == nil {
			return fmt.Sprintf("%s: %q is not a duration: give a unit, such as %sms or %ss", key, s, s, s)
		}
		return fmt.Sprintf("%s: %q is not a duration (examples: 500ms, 30s, 5m)", key, s)
	}
	switch v.Kind() {
	case reflect.String:
		if len(enum) > 0 && !contains(enum, s) {
			msg := fmt.Sprintf("%s: %q is not one of %s", key, s, strings.Join(enum, ", "))
			if sg := suggest(s, enum); sg != "" {
				msg += fmt.Sprintf(" (did you mean %q?)", sg)
			}
			return msg
		}
		v.SetString(s)
	case reflect.Bool:
		b, err := strconv.ParseBool(s)
		if err != nil {
			return fmt.Sprintf("%s: %q is not a boolean (true or false)", key, s)
		}
		v.SetBool(b)
	case reflect.Float64:
		f, err := strconv.ParseFloat(s, 64)
		if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
			return fmt.Sprintf("%s: %q is not a number", key, s)
		}
		v.SetFloat(f)
	default: // a whole number
		i, err := strconv.ParseInt(s, 10, 64)
		switch {
		case err != nil:
			return fmt.Sprintf("%s: %q is not a whole number", key, s)
		case v.OverflowInt(i):
			return fmt.Sprintf("%s: %s is too large", key, s)
		}
		v.SetInt(i)
	}
	return ""
}

// decodeList decodes a YAML sequence into a slice or an array of exactly its length. A
// single string where a list of strings is expected is taken as a list of one.
func (d *decoder) decodeList(n ast.Node, v reflect.Value, path, key string, enum []string) {
	seq, ok := n.(*ast.SequenceNode)
	if !ok {
		if v.Kind() == reflect.Slice && v.Type().Elem().Kind() == reflect.String {
			if s, ok := d.scalar(n, key); ok {
				v.Set(reflect.ValueOf([]string{s}).Convert(v.Type()))
			}
			return
		}
		d.errorf(n, "%s must be a list, not %s", key, describe(n))
		return
	}
	if v.Kind() == reflect.Array {
		if len(seq.Values) != v.Len() {
			d.errorf(n, "%s must have exactly %d values, not %d", key, v.Len(), len(seq.Values))
			return
		}
	} else {
		v.Set(reflect.MakeSlice(v.Type(), len(seq.Values), len(seq.Values)))
	}
	for i, el := range seq.Values {
		d.decodeValue(el, v.Index(i), fmt.Sprintf("%s[%d]", path, i), fmt.Sprintf("%s[%d]", key, i), enum)
	}
}

// decodeMap decodes a YAML mapping into a map keyed by string, recording where each key
// stands for the messages of later checks.
func (d *decoder) decodeMap(n ast.Node, v reflect.Value, path, key string) {
	pairs, ok := mappingOf(n)
	if !ok {
		d.errorf(n, "%s must be a mapping, not %s", key, describe(n))
		return
	}
	if v.IsNil() {
		v.Set(reflect.MakeMap(v.Type()))
	}
	for _, kv := range pairs {
		k := keyString(kv)
		d.keys[join(path, k)] = kv.Key
		el := reflect.New(v.Type().Elem()).Elem()
		d.decodeValue(kv.Value, el, join(path, k), join(key, k), nil)
		v.SetMapIndex(reflect.ValueOf(k), el)
	}
}

// pairAdder is a value decoded from a mapping of strings whose order matters
// (tasks.ColumnMap): a Go map would lose it.
type pairAdder interface {
	AddPair(key, value string)
}

// decodePairs decodes a YAML mapping of strings into pm, pair by pair in order,
// recording where each key stands for the messages of later checks.
func (d *decoder) decodePairs(n ast.Node, pm pairAdder, path, key string) {
	pairs, ok := mappingOf(n)
	if !ok {
		d.errorf(n, "%s must be a mapping, not %s", key, describe(n))
		return
	}
	for _, kv := range pairs {
		k := keyString(kv)
		d.keys[join(path, k)] = kv.Key
		if s, ok := d.scalar(unwrap(kv.Value), join(key, k)); ok {
			pm.AddPair(k, s)
		}
	}
}

// generic converts free-form YAML (a filter, a STAC query) into plain Go values.
func (d *decoder) generic(n ast.Node, key string) any {
	n = unwrap(n)
	switch v := n.(type) {
	case nil, *ast.NullNode:
		return nil
	case *ast.SequenceNode:
		out := make([]any, len(v.Values))
		for i, el := range v.Values {
			out[i] = d.generic(el, key)
		}
		return out
	case *ast.MappingNode, *ast.MappingValueNode:
		pairs, _ := mappingOf(v)
		out := make(map[string]any, len(pairs))
		for _, kv := range pairs {
			out[keyString(kv)] = d.generic(kv.Value, key)
		}
		return out
	case *ast.StringNode, *ast.LiteralNode:
		s, _ := d.scalar(v, key)
		return s
	case ast.ScalarNode:
		return v.GetValue()
	}
	return n.String()
}

// scalar returns the text of a scalar node with ${VAR} references expanded.
func (d *decoder) scalar(n ast.Node, key string) (string, bool) {
	var s string
	switch v := n.(type) {
	case *ast.StringNode:
		s = v.Value
	case *ast.LiteralNode:
		s = v.Value.Value
	case *ast.IntegerNode, *ast.FloatNode, *ast.BoolNode, *ast.InfinityNode, *ast.NanNode:
		s = v.GetToken().Value
	default:
		d.errorf(n, "%s must be a single value, not %s", key, describe(n))
		return "", false
	}
	out, err := d.expandAt(s)
	if err != nil {
		d.errorf(n, "%s: %v", key, err)
		return "", false
	}
	return out, true
}

// expandAt expands the ${VAR} references of s for where it stands (d.path) and collects
// the secrets among their values: in a URL, each value is placed for the part of the URL
// it lands in (expandURL), and those in userinfo or of a variable whose name says it is
// a credential are secrets, as is the "user:password" pair a client sends as Basic; in a
// header, every value is a secret and none may break the header's line; anywhere else
// values are spliced as they are.
func (d *decoder) expandAt(s string) (string, error) {
	switch secretPath(d.path) {
	case "url":
		out, err := expandURL(s, d.lookup, func(name, val string, p part) {
			if p == partUserinfo || redact.SensitiveName(name) {
				d.secrets = append(d.secrets, val)
			}
		})
		if u, perr := url.Parse(out); err == nil && perr == nil && u.User != nil {
			if pw, ok := u.User.Password(); ok && pw != "" {
				d.secrets = append(d.secrets, u.User.Username()+":"+pw, pw)
			}
		}
		return out, err
	case "header":
		out, err := expand(s, func(name string) (string, bool) {
			v, ok := d.lookup(name)
			if ok && v != "" {
				d.secrets = append(d.secrets, v)
			}
			return v, ok
		})
		if i := strings.IndexAny(out, "\r\n\x00"); err == nil && i >= 0 {
			return "", fmt.Errorf("a header value cannot hold a line break or a NUL byte (byte %d): it would end the header and start another", i)
		}
		return out, err
	}
	return expand(s, d.lookup)
}

// secretPath tells where a value at path may carry credentials it takes from the
// environment: "header" (any value of a header), "url" (a url or *_url key: a value of
// a variable whose name says it is one, TENANT_TOKEN or API_KEY, since a URL also takes
// harmless parts such as a host or a layer name), or "" elsewhere.
func secretPath(path string) string {
	parts := strings.Split(path, ".")
	last := parts[len(parts)-1]
	switch {
	case slices.Contains(parts, "headers"):
		return "header"
	case last == "url" || strings.HasSuffix(last, "_url"):
		return "url"
	}
	return ""
}

// expand replaces ${VAR} and ${VAR:-default}; $${ stays a literal ${.
func expand(s string, lookup func(string) (string, bool)) (string, error) {
	if !strings.Contains(s, "${") {
		return s, nil
	}
	var b strings.Builder
	err := walkRefs(s, func(lit string) { b.WriteString(lit) }, func(name, def string, hasDef bool, _ string) error {
		val, ok := lookup(name)
		switch {
		case ok && (val != "" || !hasDef):
			b.WriteString(val)
		case hasDef:
			b.WriteString(def)
		default:
			return unset(name)
		}
		return nil
	})
	return b.String(), err
}

// walkRefs walks s, handing lit its literal text ($${ as ${) and ref each ${VAR} or
// ${VAR:-default} reference with the template that follows it, in order.
func walkRefs(s string, lit func(string), ref func(name, def string, hasDef bool, rest string) error) error {
	for {
		i := strings.Index(s, "${")
		if i < 0 {
			lit(s)
			return nil
		}
		if i > 0 && s[i-1] == '$' {
			lit(s[:i-1])
			lit("${")
			s = s[i+2:]
			continue
		}
		lit(s[:i])
		end := strings.IndexByte(s[i:], '}')
		if end < 0 {
			return fmt.Errorf("unclosed ${ in %q", s)
		}
		name, def, hasDef := strings.Cut(s[i+2:i+end], ":-")
		if !validEnvName(name) {
			return fmt.Errorf("%q is not a valid environment variable name", name)
		}
		s = s[i+end+1:]
		if err := ref(name, def, hasDef, s); err != nil {
			return err
		}
	}
}

func unset(name string) error {
	return fmt.Errorf("environment variable %s is not set (write ${%s:-default} to give a default)", name, name)
}

func validEnvName(s string) bool {
	if s == "" {
		return false
	}
	for i, r := range s {
		if r == '_' || r >= 'A' && r <= 'Z' || r >= 'a' && r <= 'z' || i > 0 && r >= '0' && r <= '9' {
			continue
		}
		return false
	}
	return true
}

func describe(n ast.Node) string {
	switch unwrap(n).(type) {
	case *ast.MappingNode, *ast.MappingValueNode:
		return "a mapping"
	case *ast.SequenceNode:
		return "a list"
	case *ast.NullNode, nil:
		return "nothing"
	}
	return fmt.Sprintf("%q", n.String())
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// suggest is the name s most likely stands for, if any (didyoumean.Nearest).
func suggest(s string, candidates []string) string { return didyoumean.Nearest(s, candidates) }
