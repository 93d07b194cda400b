// Package config reads the daemon's config.yaml and applies environment
// overrides. Each subsystem owns the struct for its own section and its defaults;
// this package only knows how to fill such a struct: YAML first (strict, with
// line and column in every error), then environment variables, which win.
// A decode reports every error it finds, not just the first (errors.Join of
// *Error values; Errors lists them), so one edit fixes a whole config.yaml.
//
// Precedence (README, "Configuration"): flag > environment > config.yaml > default.
// Flags are applied by the CLI after Decode returns.
package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"reflect"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

// MaxFileSize bounds config.yaml so a stray large file cannot exhaust memory.
const MaxFileSize = 1 << 20

// File is a parsed config.yaml. The zero value (or a File for a missing file)
// is empty: every Decode leaves defaults in place except for the environment.
type File struct {
	path string
	root *yaml.Node // the top-level mapping, or nil
	// LookupEnv reads the environment; tests replace it.
	LookupEnv func(string) (string, bool)
	// Environ lists the environment as "NAME=value" (os.Environ when nil),
	// for map entries named by variables (see envmap.go); values are still
	// read through LookupEnv.
	Environ func() []string
}

// Empty returns a File with no YAML content that still reads the environment.
func Empty() *File { return &File{LookupEnv: os.LookupEnv} }

// Load reads and parses path. A missing file is not an error: the daemon runs
// on defaults without a prior `bridge init`.
func Load(path string) (*File, error) {
	f := &File{path: path, LookupEnv: os.LookupEnv}
	fh, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return f, nil
	}
	if err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	defer fh.Close()
	data, err := io.ReadAll(io.LimitReader(fh, MaxFileSize+1))
	if err != nil {
		return nil, fmt.Errorf("config: read %s: %w", path, err)
	}
	if len(data) > MaxFileSize {
		return nil, fmt.Errorf("config: %s: larger than %d bytes", path, MaxFileSize)
	}
	if err := f.parse(data); err != nil {
		return nil, err
	}
	return f, nil
}

// Parse parses YAML bytes as a config file; name labels errors.
func Parse(name string, data []byte) (*File, error) {
	f := &File{path: name, LookupEnv: os.LookupEnv}
	if err := f.parse(data); err != nil {
		return nil, err
	}
	return f, nil
}

func (f *File) parse(data []byte) error {
	if len(bytes.TrimSpace(data)) == 0 {
		return nil
	}
	var doc yaml.Node
	dec := yaml.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&doc); err != nil {
		return fmt.Errorf("config: %s: %s", f.path, strings.TrimPrefix(err.Error(), "yaml: "))
	}
	if len(doc.Content) == 0 {
		return nil
	}
	root := doc.Content[0]
	if root.Kind != yaml.MappingNode {
		return f.errAt(root, "the top level must be a mapping of sections")
	}
	f.root = root
	return nil
}

// Path is the file this config was read from.
func (f *File) Path() string { return f.path }

// Error is a configuration error at a position of the file, or from an
// environment variable.
type Error struct {
	File   string
	Line   int
	Column int
	Env    string
	Msg    string
}

func (e *Error) Error() string {
	switch {
	case e.Env != "":
		return fmt.Sprintf("config: environment variable %s: %s", e.Env, e.Msg)
	case e.Line > 0:
		return fmt.Sprintf("config: %s:%d:%d: %s", e.File, e.Line, e.Column, e.Msg)
	default:
		return fmt.Sprintf("config: %s: %s", e.File, e.Msg)
	}
}

func (f *File) errAt(n *yaml.Node, format string, args ...any) error {
	return &Error{File: f.path, Line: n.Line, Column: n.Column, Msg: fmt.Sprintf(format, args...)}
}

// Validator is implemented by section structs that check their own values
// after YAML and environment have been applied.
type Validator interface {
	Validate() error
}

// Decode fills out (a pointer to a struct holding defaults) from the section
// at the dotted prefix (e.g. "platform.webhooks"; "" is the whole file), then
// from environment variables.
//
// Field names come from `yaml:"name"` tags (kebab-case by convention). A
// field's environment variable is `env:"NAME"` when tagged, otherwise it is
// derived from the full dotted path: upper-cased with '.' and '-' replaced by
// '_' (platform.webhooks.security.max-payload-size becomes
// PLATFORM_WEBHOOKS_SECURITY_MAX_PAYLOAD_SIZE). `env:"-"` disables it.
func (f *File) Decode(prefix string, out any) error {
	rv := reflect.ValueOf(out)
	if rv.Kind() != reflect.Pointer || rv.Elem().Kind() != reflect.Struct {
		return fmt.Errorf("config: Decode needs a pointer to a struct, got %T", out)
	}
	node, err := f.section(prefix)
	if err != nil {
		return err
	}
	var errs []error
	if node != nil {
		errs = append(errs, f.decodeStruct(node, rv.Elem()))
	}
	errs = append(errs, f.applyEnv(prefix, rv.Elem()))
	if err := errors.Join(errs...); err != nil {
		// Validation of half-decoded values would only add noise.
		return err
	}
	if v, ok := out.(Validator); ok {
		if err := v.Validate(); err != nil {
			var ce *Error
			if errors.As(err, &ce) {
				return err
			}
			return &Error{File: f.path, Msg: fmt.Sprintf("%s: %v", prefixLabel(prefix), err)}
		}
	}
	return nil
}

func prefixLabel(p string) string {
	if p == "" {
		return "top level"
	}
	return p
}

// section walks the dotted prefix through nested mappings.
func (f *File) section(prefix string) (*yaml.Node, error) {
	n := f.root
	if n == nil || prefix == "" {
		return n, nil
	}
	for _, part := range strings.Split(prefix, ".") {
		v := lookup(n, part)
		if v == nil {
			return nil, nil
		}
		if v.Kind != yaml.MappingNode {
			if v.Tag == "!!null" {
				return nil, nil
			}
			return nil, f.errAt(v, "%q must be a mapping", part)
		}
		n = v
	}
	return n, nil
}

// Keys returns the top-level keys present in the file, for checking that
// every section is known to some subsystem.
func (f *File) Keys() []*yaml.Node {
	if f.root == nil {
		return nil
	}
	var keys []*yaml.Node
	for i := 0; i+1 < len(f.root.Content); i += 2 {
		keys = append(keys, f.root.Content[i])
	}
	return keys
}

// CheckKnown reports every top-level key that is not in known, each with its position.
func (f *File) CheckKnown(known ...string) error {
	var errs []error
	for _, k := range f.Keys() {
		ok := false
		for _, want := range known {
			if k.Value == want {
				ok = true
				break
			}
		}
		if !ok {
			errs = append(errs, f.errAt(k, "unknown section %q (known: %s)", k.Value, strings.Join(known, ", ")))
		}
	}
	return errors.Join(errs...)
}

// Errors lists the configuration errors err holds, in the order found: the
// *Error values joined by Decode and CheckKnown (or err itself when it joins
// nothing).
func Errors(err error) []error {
	if err == nil {
		return nil
	}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		var out []error
		for _, e := range j.Unwrap() {
			out = append(out, Errors(e)...)
		}
		return out
	}
	return []error{err}
}

func lookup(m *yaml.Node, key string) *yaml.Node {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return m.Content[i+1]
		}
	}
	return nil
}

func fieldName(sf reflect.StructField) string {
	name, _, _ := strings.Cut(sf.Tag.Get("yaml"), ",")
	if name == "" {
		name = strings.ToLower(sf.Name)
	}
	return name
}

var durationType = reflect.TypeOf(Duration(0))

func (f *File) decodeStruct(n *yaml.Node, v reflect.Value) error {
	if n.Kind != yaml.MappingNode {
		return f.errAt(n, "expected a mapping")
	}
	t := v.Type()
	seen := map[string]bool{}
	var errs []error
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, val := n.Content[i], n.Content[i+1]
		if seen[k.Value] {
			errs = append(errs, f.errAt(k, "duplicate key %q", k.Value))
			continue
		}
		seen[k.Value] = true
		idx := -1
		for j := 0; j < t.NumField(); j++ {
			sf := t.Field(j)
			if sf.IsExported() && sf.Tag.Get("yaml") != "-" && fieldName(sf) == k.Value {
				idx = j
				break
			}
		}
		if idx < 0 {
			errs = append(errs, f.errAt(k, "unknown key %q", k.Value))
			continue
		}
		errs = append(errs, f.decodeValue(val, v.Field(idx)))
	}
	return errors.Join(errs...)
}

func (f *File) decodeValue(n *yaml.Node, v reflect.Value) error {
	if n.Kind == yaml.AliasNode {
		return f.errAt(n, "aliases are not supported in config.yaml")
	}
	switch {
	case v.Kind() == reflect.Struct:
		if n.Tag == "!!null" {
			return nil
		}
		return f.decodeStruct(n, v)
	case v.Type() == durationType:
		if n.Kind != yaml.ScalarNode {
			return f.errAt(n, "expected a duration such as 30s or PT30S")
		}
		d, err := ParseDuration(n.Value)
		if err != nil {
			return f.errAt(n, "%v", err)
		}
		v.SetInt(int64(d))
		return nil
	case v.Kind() == reflect.Map && v.Type().Elem().Kind() == reflect.Struct:
		if n.Kind != yaml.MappingNode {
			return f.errAt(n, "expected a mapping")
		}
		if v.IsNil() {
			v.Set(reflect.MakeMap(v.Type()))
		}
		var errs []error
		for i := 0; i+1 < len(n.Content); i += 2 {
			elem := reflect.New(v.Type().Elem()).Elem()
			if old := v.MapIndex(reflect.ValueOf(n.Content[i].Value)); old.IsValid() {
				elem.Set(old)
			}
			if err := f.decodeValue(n.Content[i+1], elem); err != nil {
				errs = append(errs, err)
				continue
			}
			v.SetMapIndex(reflect.ValueOf(n.Content[i].Value), elem)
		}
		return errors.Join(errs...)
	}
	ptr := reflect.New(v.Type())
	if err := n.Decode(ptr.Interface()); err != nil {
		return f.errAt(n, "%q is not a valid %s", n.Value, describeType(v.Type()))
	}
	v.Set(ptr.Elem())
	return nil
}

func describeType(t reflect.Type) string {
	switch t.Kind() {
	case reflect.Int, reflect.Int64, reflect.Int32:
		return "whole number"
	case reflect.Float64, reflect.Float32:
		return "number"
	case reflect.Bool:
		return "boolean (true or false)"
	case reflect.Slice:
		return "list"
	case reflect.Map:
		return "mapping"
	default:
		return t.Kind().String()
	}
}

// EnvName derives the environment variable of a dotted config path.
func EnvName(path string) string {
	r := strings.NewReplacer(".", "_", "-", "_")
	return strings.ToUpper(r.Replace(path))
}

func (f *File) applyEnv(prefix string, v reflect.Value) error {
	t := v.Type()
	var errs []error
	for i := 0; i < t.NumField(); i++ {
		sf := t.Field(i)
		if !sf.IsExported() || sf.Tag.Get("yaml") == "-" {
			continue
		}
		path := fieldName(sf)
		if prefix != "" {
			path = prefix + "." + path
		}
		fv := v.Field(i)
		if fv.Kind() == reflect.Map && sf.Tag.Get("env") == envKeyed {
			errs = append(errs, f.applyEnvMap(path, fv))
			continue
		}
		if fv.Kind() == reflect.Struct && fv.Type() != durationType {
			errs = append(errs, f.applyEnv(path, fv))
			continue
		}
		name := sf.Tag.Get("env")
		if name == "-" {
			continue
		}
		if name == "" {
			name = EnvName(path)
		}
		lookupEnv := f.LookupEnv
		if lookupEnv == nil {
			lookupEnv = os.LookupEnv
		}
		raw, ok := lookupEnv(name)
		if !ok {
			continue
		}
		if err := setFromString(fv, raw); err != nil {
			errs = append(errs, &Error{Env: name, Msg: err.Error()})
		}
	}
	return errors.Join(errs...)
}

func setFromString(v reflect.Value, raw string) error {
	raw = strings.TrimSpace(raw)
	if v.Type() == durationType {
		d, err := ParseDuration(raw)
		if err != nil {
			return err
		}
		v.SetInt(int64(d))
		return nil
	}
	switch v.Kind() {
	case reflect.String:
		v.SetString(raw)
	case reflect.Bool:
		b, err := strconv.ParseBool(raw)
		if err != nil {
			return fmt.Errorf("%q is not true or false", raw)
		}
		v.SetBool(b)
	case reflect.Int, reflect.Int64, reflect.Int32:
		n, err := strconv.ParseInt(raw, 10, 64)
		if err != nil || v.OverflowInt(n) {
			return fmt.Errorf("%q is not a whole number", raw)
		}
		v.SetInt(n)
	case reflect.Float64, reflect.Float32:
		x, err := strconv.ParseFloat(raw, 64)
		if err != nil {
			return fmt.Errorf("%q is not a number", raw)
		}
		v.SetFloat(x)
	case reflect.Slice:
		if v.Type().Elem().Kind() != reflect.String {
			return fmt.Errorf("unsupported list type %s", v.Type())
		}
		// Built element by element: a list of a named string type (e.g.
		// []Secret) is not convertible from []string.
		items := reflect.MakeSlice(v.Type(), 0, 4)
		for _, s := range strings.Split(raw, ",") {
			if s = strings.TrimSpace(s); s != "" {
				items = reflect.Append(items, reflect.ValueOf(s).Convert(v.Type().Elem()))
			}
		}
		if items.Len() == 0 {
			items = reflect.Zero(v.Type())
		}
		v.Set(items)
	default:
		return fmt.Errorf("unsupported type %s", v.Type())
	}
	return nil
}

// Duration is a time.Duration that reads Go ("1m30s") and ISO-8601 ("PT1M30S")
// forms, because the specs write their defaults in ISO-8601.
type Duration time.Duration

// D returns the value as a time.Duration.
func (d Duration) D() time.Duration { return time.Duration(d) }

// MarshalYAML writes the Go form.
func (d Duration) MarshalYAML() (any, error) { return time.Duration(d).String(), nil }

// ParseDuration accepts "1m30s", "PT1M30S", "P1DT2H" and a bare "0".
func ParseDuration(s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return 0, errors.New("empty duration")
	}
	if s[0] != 'P' && s[0] != 'p' {
		d, err := time.ParseDuration(s)
		if err != nil {
			return 0, fmt.Errorf("%q is not a duration such as 30s or PT30S", s)
		}
		if d < 0 {
			return 0, fmt.Errorf("%q: durations cannot be negative", s)
		}
		return d, nil
	}
	return parseISODuration(s)
}

func parseISODuration(s string) (time.Duration, error) {
	bad := fmt.Errorf("%q is not an ISO-8601 duration such as PT30S", s)
	rest := strings.ToUpper(s[1:])
	if rest == "" || rest == "T" {
		return 0, bad
	}
	var total time.Duration
	inTime := false
	for rest != "" {
		if rest[0] == 'T' {
			if inTime {
				return 0, bad
			}
			inTime = true
			rest = rest[1:]
			if rest == "" {
				return 0, bad
			}
			continue
		}
		i := 0
		for i < len(rest) && (rest[i] >= '0' && rest[i] <= '9' || rest[i] == '.') {
			i++
		}
		if i == 0 || i == len(rest) {
			return 0, bad
		}
		n, err := strconv.ParseFloat(rest[:i], 64)
		if err != nil {
			return 0, bad
		}
		var unit time.Duration
		switch u := rest[i]; {
		case u == 'D' && !inTime:
			unit = 24 * time.Hour
		case u == 'W' && !inTime:
			unit = 7 * 24 * time.Hour
		case u == 'H' && inTime:
			unit = time.Hour
		case u == 'M' && inTime:
			unit = time.Minute
		case u == 'S' && inTime:
			unit = time.Second
		default:
			return 0, bad
		}
		if n*float64(unit) > float64(1<<62) {
			return 0, bad
		}
		total += time.Duration(n * float64(unit))
		rest = rest[i+1:]
	}
	return total, nil
}
