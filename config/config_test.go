package config

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/matryer/is"
)

type retry struct {
	MaxAttempts  int      `yaml:"max-attempts"`
	InitialDelay Duration `yaml:"initial-delay"`
	Multiplier   float64  `yaml:"multiplier"`
}

type section struct {
	Enabled   bool             `yaml:"enabled"`
	MaxSize   int64            `yaml:"max-payload-size"`
	Types     []string         `yaml:"allowed-content-types"`
	Header    string           `yaml:"header-name" env:"CALLBACK_SIGNATURE_HEADER"`
	Secretish string           `yaml:"ignored" env:"-"`
	Retry     retry            `yaml:"retry"`
	Providers map[string]retry `yaml:"providers"`
}

func defaults() section {
	return section{Enabled: true, MaxSize: 1 << 20, Header: "X-Platform-Signature", Retry: retry{MaxAttempts: 3, InitialDelay: Duration(time.Second), Multiplier: 2}}
}

func env(m map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

func TestDecodeLayers(t *testing.T) {
	is := is.New(t)
	f, err := Parse("c.yaml", []byte(`
platform:
  webhooks:
    max-payload-size: 2048
    allowed-content-types: [application/json]
    retry:
      initial-delay: PT2S
    providers:
      github:
        max-attempts: 5
`))
	is.NoErr(err)
	f.LookupEnv = env(map[string]string{
		"PLATFORM_WEBHOOKS_RETRY_MULTIPLIER": "1.5",
		"CALLBACK_SIGNATURE_HEADER":          "X-Sig",
		"PLATFORM_WEBHOOKS_IGNORED":          "nope",
		"PLATFORM_WEBHOOKS_ENABLED":          "false",
	})
	got := defaults()
	is.NoErr(f.Decode("platform.webhooks", &got))
	is.Equal(got.MaxSize, int64(2048))
	is.Equal(got.Types, []string{"application/json"})
	is.Equal(got.Retry.InitialDelay.D(), 2*time.Second)
	is.Equal(got.Retry.MaxAttempts, 3) // default kept
	is.Equal(got.Retry.Multiplier, 1.5)
	is.Equal(got.Header, "X-Sig")
	is.Equal(got.Secretish, "")
	is.Equal(got.Enabled, false)
	is.Equal(got.Providers["github"].MaxAttempts, 5)
}

func TestEnvWinsOverFile(t *testing.T) {
	is := is.New(t)
	f, err := Parse("c.yaml", []byte("s:\n  max-payload-size: 10\n"))
	is.NoErr(err)
	f.LookupEnv = env(map[string]string{"S_MAX_PAYLOAD_SIZE": "20"})
	got := defaults()
	is.NoErr(f.Decode("s", &got))
	is.Equal(got.MaxSize, int64(20))
}

func TestMissingSectionKeepsDefaults(t *testing.T) {
	is := is.New(t)
	f := Empty()
	f.LookupEnv = env(nil)
	got := defaults()
	is.NoErr(f.Decode("platform.webhooks", &got))
	is.Equal(got, defaults())
}

func TestErrorsCarryPositions(t *testing.T) {
	cases := []struct {
		name, yaml, want string
	}{
		{"unknown key", "s:\n  bogus: 1\n", `c.yaml:2:3: unknown key "bogus"`},
		{"bad int", "s:\n  max-payload-size: lots\n", `c.yaml:2:21: "lots" is not a valid whole number`},
		{"bad duration", "s:\n  retry:\n    initial-delay: soon\n", `c.yaml:3:20:`},
		{"duplicate", "s:\n  enabled: true\n  enabled: false\n", `c.yaml:3:3: duplicate key`},
		{"not mapping", "s: 3\n", `c.yaml:1:4: "s" must be a mapping`},
		{"nested unknown", "s:\n  retry:\n    nope: 1\n", `c.yaml:3:5: unknown key "nope"`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			is := is.New(t)
			f, err := Parse("c.yaml", []byte(c.yaml))
			is.NoErr(err)
			f.LookupEnv = env(nil)
			got := defaults()
			err = f.Decode("s", &got)
			is.True(err != nil)
			is.True(strings.Contains(err.Error(), c.want)) // error names file:line:col
		})
	}
}

func TestBadEnvNamesVariable(t *testing.T) {
	is := is.New(t)
	f := Empty()
	f.LookupEnv = env(map[string]string{"S_MAX_PAYLOAD_SIZE": "big"})
	got := defaults()
	err := f.Decode("s", &got)
	var ce *Error
	is.True(errors.As(err, &ce))
	is.Equal(ce.Env, "S_MAX_PAYLOAD_SIZE")
}

func TestSyntaxErrorHasLine(t *testing.T) {
	is := is.New(t)
	_, err := Parse("c.yaml", []byte("a:\n  b: [\n"))
	is.True(err != nil)
	is.True(strings.Contains(err.Error(), "c.yaml"))
	is.True(strings.Contains(err.Error(), "line"))
}

func TestTopLevelMustBeMapping(t *testing.T) {
	is := is.New(t)
	_, err := Parse("c.yaml", []byte("- a\n- b\n"))
	is.True(err != nil)
}

func TestLoadMissingAndTooLarge(t *testing.T) {
	is := is.New(t)
	dir := t.TempDir()
	f, err := Load(filepath.Join(dir, "none.yaml"))
	is.NoErr(err)
	is.Equal(len(f.Keys()), 0)
	big := filepath.Join(dir, "big.yaml")
	is.NoErr(os.WriteFile(big, make([]byte, MaxFileSize+1), 0o600))
	_, err = Load(big)
	is.True(err != nil)
}

func TestCheckKnown(t *testing.T) {
	is := is.New(t)
	f, err := Parse("c.yaml", []byte("listen: {}\nmystery: 1\n"))
	is.NoErr(err)
	err = f.CheckKnown("listen", "log")
	is.True(err != nil)
	is.True(strings.Contains(err.Error(), `c.yaml:2:1: unknown section "mystery"`))
}

func TestDecodeNeedsStructPointer(t *testing.T) {
	is := is.New(t)
	var x int
	is.True(Empty().Decode("", &x) != nil)
	is.True(Empty().Decode("", section{}) != nil)
}

type validated struct {
	N int `yaml:"n"`
}

func (v *validated) Validate() error {
	if v.N > 10 {
		return errors.New("n must be at most 10")
	}
	return nil
}

func TestValidateHook(t *testing.T) {
	is := is.New(t)
	f, _ := Parse("c.yaml", []byte("v:\n  n: 11\n"))
	f.LookupEnv = env(nil)
	var v validated
	err := f.Decode("v", &v)
	is.True(err != nil)
	is.True(strings.Contains(err.Error(), "n must be at most 10"))
}

func TestParseDuration(t *testing.T) {
	cases := []struct {
		in   string
		want time.Duration
		ok   bool
	}{
		{"30s", 30 * time.Second, true},
		{"PT1S", time.Second, true},
		{"PT30S", 30 * time.Second, true},
		{"PT1M30S", 90 * time.Second, true},
		{"P1DT2H", 26 * time.Hour, true},
		{"P1W", 7 * 24 * time.Hour, true},
		{"PT0.5S", 500 * time.Millisecond, true},
		{"0", 0, true},
		{"", 0, false},
		{"P", 0, false},
		{"PT", 0, false},
		{"P1H", 0, false},
		{"PT1D", 0, false},
		{"-1s", 0, false},
		{"PTS", 0, false},
		{"P1DT", 0, false},
		{"soon", 0, false},
	}
	for _, c := range cases {
		got, err := ParseDuration(c.in)
		if (err == nil) != c.ok || got != c.want {
			t.Errorf("ParseDuration(%q) = %v, %v; want %v ok=%v", c.in, got, err, c.want, c.ok)
		}
	}
}

func TestEnvName(t *testing.T) {
	is := is.New(t)
	is.Equal(EnvName("platform.webhooks.security.max-payload-size"), "PLATFORM_WEBHOOKS_SECURITY_MAX_PAYLOAD_SIZE")
}

func FuzzParseDuration(f *testing.F) {
	for _, s := range []string{"PT1S", "P1DT2H3M4.5S", "1h2m", "P", "PT9999999999999H"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d, err := ParseDuration(s)
		if err == nil && d < 0 {
			t.Fatalf("negative duration %v from %q", d, s)
		}
	})
}

func FuzzParse(f *testing.F) {
	f.Add([]byte("listen:\n  bridge-port: 1\n"))
	f.Add([]byte("a: [\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		file, err := Parse("f.yaml", data)
		if err != nil {
			return
		}
		file.LookupEnv = env(nil)
		got := defaults()
		_ = file.Decode("s", &got)
		_ = file.CheckKnown("s")
	})
}

// TestDecodeReportsEveryError: a config.yaml with several mistakes names each
// of them with its position, not only the first (README: Configuration).
func TestDecodeReportsEveryError(t *testing.T) {
	is := is.New(t)
	src := "s:\n  bogus: 1\n  max-payload-size: lots\n  enabled: true\n  enabled: false\n  retry:\n    nope: 1\n    initial-delay: soon\n  providers:\n    stripe: {max-attempts: many}\n"
	f, err := Parse("c.yaml", []byte(src))
	is.NoErr(err)
	f.LookupEnv = env(map[string]string{"S_MULTIPLIER": "x", "CALLBACK_SIGNATURE_HEADER": "ok"})
	got := defaults()
	err = f.Decode("s", &got)
	errs := Errors(err)
	want := []string{
		`c.yaml:2:3: unknown key "bogus"`,
		`c.yaml:3:21: "lots" is not a valid whole number`,
		`c.yaml:5:3: duplicate key "enabled"`,
		`c.yaml:7:5: unknown key "nope"`,
		`c.yaml:8:20: "soon" is not a duration`,
		`c.yaml:10:28: "many" is not a valid whole number`,
	}
	is.Equal(len(errs), len(want)) // every mistake of the file, nothing from the environment yet
	for i, w := range want {
		var ce *Error
		is.True(errors.As(errs[i], &ce))
		is.True(strings.Contains(errs[i].Error(), w)) // in file order, with line:col
	}

	// The environment's mistakes are reported together too.
	f = Empty()
	f.LookupEnv = env(map[string]string{"S_MAX_PAYLOAD_SIZE": "big", "S_RETRY_MULTIPLIER": "x", "S_ENABLED": "maybe"})
	got = defaults()
	errs = Errors(f.Decode("s", &got))
	is.Equal(len(errs), 3)

	// A clean file has none.
	f, err = Parse("c.yaml", []byte("s:\n  enabled: false\n"))
	is.NoErr(err)
	f.LookupEnv = env(nil)
	got = defaults()
	is.NoErr(f.Decode("s", &got))
	is.Equal(Errors(nil), nil)
}

func TestCheckKnownReportsEverySection(t *testing.T) {
	is := is.New(t)
	f, err := Parse("c.yaml", []byte("listen: {}\nmystery: 1\nlog: {}\nlsiten: {}\n"))
	is.NoErr(err)
	errs := Errors(f.CheckKnown("listen", "log"))
	is.Equal(len(errs), 2)
	is.True(strings.Contains(errs[0].Error(), `c.yaml:2:1: unknown section "mystery"`))
	is.True(strings.Contains(errs[1].Error(), `c.yaml:4:1: unknown section "lsiten"`))
}
