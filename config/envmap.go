package config

import (
	"fmt"
	"os"
	"reflect"
	"slices"
	"strings"
)

// Keyed maps in the environment
//
// A map field tagged `env:"keyed"` (per-provider settings such as
// platform.webhooks.retry.providers.<name>) takes its entries from
// environment variables too, as callbacks/README.md and ingest/README.md say every property has one: the
// variable is the map's own name, the entry's key and, for a map of structs,
// the field, each derived like any other (upper case, '.' and '-' become
// '_'):
//
//	PLATFORM_WEBHOOKS_RETRY_PROVIDERS_STRIPE_MAX_ATTEMPTS=5     retry.providers.stripe.max-attempts
//	PLATFORM_WEBHOOKS_IP_WHITELIST_GITHUB=192.30.252.0/22       ip-whitelist.github
//
// The key is read back in lower case with '_' as '-' (an entry already in
// config.yaml is matched by its derived name first), so a key holding '_' or
// upper case can only be written in config.yaml. When a field's name is a
// suffix of another's, the longest match wins. A variable under the map's
// prefix that names no field is an error, like an unknown key in the file.

// envKeyed is the env tag value that opts a map field in.
const envKeyed = "keyed"

// environNames lists the names of the environment's variables.
func (f *File) environNames() []string {
	environ := f.Environ
	if environ == nil {
		environ = os.Environ
	}
	var names []string
	for _, kv := range environ() {
		if name, _, ok := strings.Cut(kv, "="); ok && name != "" {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	return slices.Compact(names)
}

// leaf is a settable field of a map's element struct, with its variable suffix.
type leaf struct {
	index  []int
	suffix string // "_MAX_ATTEMPTS"
}

func leaves(t reflect.Type, index []int, prefix string) []leaf {
	var out []leaf
	for i := 0; i < t.NumField(); i++ {
		sf := t.Field(i)
		if !sf.IsExported() || sf.Tag.Get("yaml") == "-" || sf.Tag.Get("env") == "-" {
			continue
		}
		idx := append(slices.Clone(index), i)
		suffix := prefix + "_" + EnvName(fieldName(sf))
		if sf.Type.Kind() == reflect.Struct && sf.Type != durationType {
			out = append(out, leaves(sf.Type, idx, suffix)...)
			continue
		}
		out = append(out, leaf{index: idx, suffix: suffix})
	}
	// Longest first, so "_RETRY_ON_TIMEOUT" is tried before a shorter
	// suffix of it.
	slices.SortStableFunc(out, func(a, b leaf) int { return len(b.suffix) - len(a.suffix) })
	return out
}

// applyEnvMap adds or overrides the entries of the map v (at the dotted path)
// named by environment variables.
func (f *File) applyEnvMap(path string, v reflect.Value) error {
	lookupEnv := f.LookupEnv
	if lookupEnv == nil {
		lookupEnv = os.LookupEnv
	}
	prefix := EnvName(path) + "_"
	elemT := v.Type().Elem()
	var fields []leaf
	if elemT.Kind() == reflect.Struct {
		fields = leaves(elemT, nil, "")
	}
	for _, name := range f.environNames() {
		rest, ok := strings.CutPrefix(name, prefix)
		if !ok {
			continue
		}
		raw, ok := lookupEnv(name)
		if !ok {
			continue
		}
		keyPart, target := rest, []int(nil)
		if fields != nil {
			found := false
			for _, l := range fields {
				if k, ok := strings.CutSuffix(rest, l.suffix); ok && k != "" {
					keyPart, target, found = k, l.index, true
					break
				}
			}
			if !found {
				return &Error{Env: name, Msg: fmt.Sprintf("does not name a setting of %s.<name> (%s<NAME>_<SETTING>)", path, prefix)}
			}
		}
		key := envMapKey(v, keyPart)
		if key == "" {
			return &Error{Env: name, Msg: fmt.Sprintf("names no entry of %s", path)}
		}
		elem := reflect.New(elemT).Elem()
		kv := reflect.ValueOf(key).Convert(v.Type().Key())
		if old := v.MapIndex(kv); old.IsValid() {
			elem.Set(old)
		}
		dst := elem
		if target != nil {
			dst = elem.FieldByIndex(target)
		}
		if err := setFromString(dst, raw); err != nil {
			return &Error{Env: name, Msg: err.Error()}
		}
		if v.IsNil() {
			v.Set(reflect.MakeMap(v.Type()))
		}
		v.SetMapIndex(kv, elem)
	}
	return nil
}

// envMapKey turns the key part of a variable back into a map key: an
// existing key whose derived name matches, else lower case with '-'.
func envMapKey(v reflect.Value, part string) string {
	for _, k := range v.MapKeys() {
		if EnvName(k.String()) == part {
			return k.String()
		}
	}
	return strings.ToLower(strings.ReplaceAll(part, "_", "-"))
}
