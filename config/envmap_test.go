package config

import (
	"errors"
	"testing"
	"time"

	"github.com/matryer/is"
)

type secretish string

type keyedSection struct {
	Providers map[string]retry       `yaml:"providers" env:"keyed"`
	Allow     map[string][]string    `yaml:"allow" env:"keyed"`
	Plain     map[string]retry       `yaml:"plain"`
	Keys      map[string][]secretish `yaml:"keys" env:"keyed"`
}

func environ(m map[string]string) func() []string {
	return func() []string {
		var out []string
		for k, v := range m {
			out = append(out, k+"="+v)
		}
		return out
	}
}

func TestKeyedMapsFromEnvironment(t *testing.T) {
	is := is.New(t)
	f, err := Parse("c.yaml", []byte(`
s:
  providers:
    github: {max-attempts: 5, multiplier: 3}
    my-prov: {max-attempts: 2}
`))
	is.NoErr(err)
	vars := map[string]string{
		"S_PROVIDERS_STRIPE_MAX_ATTEMPTS":  "7",
		"S_PROVIDERS_STRIPE_INITIAL_DELAY": "PT3S",
		"S_PROVIDERS_GITHUB_MAX_ATTEMPTS":  "9", // environment wins over the file
		"S_PROVIDERS_MY_PROV_MULTIPLIER":   "1.5",
		"S_ALLOW_GITHUB":                   "192.30.252.0/22, 10.0.0.1",
		"S_PLAIN_X_MAX_ATTEMPTS":           "4", // not keyed: ignored
		"S_KEYS_ACME":                      "a,b",
	}
	f.LookupEnv, f.Environ = env(vars), environ(vars)
	var got keyedSection
	is.NoErr(f.Decode("s", &got))
	is.Equal(got.Providers["stripe"], retry{MaxAttempts: 7, InitialDelay: Duration(3 * time.Second)})
	is.Equal(got.Providers["github"], retry{MaxAttempts: 9, Multiplier: 3}) // the file's other values kept
	is.Equal(got.Providers["my-prov"], retry{MaxAttempts: 2, Multiplier: 1.5})
	is.Equal(got.Allow["github"], []string{"192.30.252.0/22", "10.0.0.1"})
	is.Equal(len(got.Plain), 0)
	is.Equal(got.Keys["acme"], []secretish{"a", "b"})
}

func TestKeyedMapBadVariables(t *testing.T) {
	for _, tc := range []struct{ name, value string }{
		{"S_PROVIDERS_STRIPE_MAX_ATTEMPT", "3"}, // no such setting
		{"S_PROVIDERS__MAX_ATTEMPTS", "3"},      // no entry name
		{"S_PROVIDERS_STRIPE_MAX_ATTEMPTS", "many"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			is := is.New(t)
			f := Empty()
			vars := map[string]string{tc.name: tc.value}
			f.LookupEnv, f.Environ = env(vars), environ(vars)
			var got keyedSection
			err := f.Decode("s", &got)
			var ce *Error
			is.True(errors.As(err, &ce))
			is.Equal(ce.Env, tc.name)
		})
	}
}
