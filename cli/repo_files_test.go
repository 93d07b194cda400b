package cli

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/matryer/is"
	"gopkg.in/yaml.v3"
)

// TestPackagingLicence: the licence the release names is in the repository
// and goreleaser uses the current Homebrew keys (issue 20, item 22).
func TestPackagingLicence(t *testing.T) {
	is := is.New(t)
	licence, err := os.ReadFile("../LICENSE")
	is.NoErr(err)
	is.True(strings.Contains(string(licence), "Apache License\n                           Version 2.0, January 2004"))
	is.True(strings.Contains(string(licence), "END OF TERMS AND CONDITIONS"))
	data, err := os.ReadFile("../goreleaser.yaml")
	is.NoErr(err)
	var cfg struct {
		Brews    []any `yaml:"brews"`
		Archives []struct {
			Files []string `yaml:"files"`
		} `yaml:"archives"`
		Casks []struct {
			Name     string   `yaml:"name"`
			License  string   `yaml:"license"`
			Binaries []string `yaml:"binaries"`
		} `yaml:"homebrew_casks"`
	}
	is.NoErr(yaml.Unmarshal(data, &cfg))
	is.Equal(len(cfg.Brews), 0) // phased out by goreleaser
	is.Equal(len(cfg.Casks), 1)
	is.Equal(cfg.Casks[0].License, "Apache-2.0")
	is.Equal(cfg.Casks[0].Binaries, []string{"bridge"})
	matched := false
	for _, a := range cfg.Archives {
		for _, f := range a.Files {
			if ok, _ := filepath.Match(f, "LICENSE"); ok {
				matched = true
			}
		}
	}
	is.True(matched) // the archives ship the licence
}

// TestReadmeReferencesRealFiles: every examples/ path README.md names
// exists, and its commands use the addresses 'bridge status' reports, not
// the default ports (issue 20, item 19).
func TestReadmeReferencesRealFiles(t *testing.T) {
	is := is.New(t)
	data, err := os.ReadFile("../README.md")
	is.NoErr(err)
	readme := string(data)
	paths := regexp.MustCompile(`examples/[A-Za-z0-9_./*-]+[A-Za-z0-9*]`).FindAllString(readme, -1)
	is.True(len(paths) > 3)
	for _, p := range paths {
		matches, err := filepath.Glob(filepath.Join("..", p))
		is.NoErr(err)
		if len(matches) == 0 {
			t.Errorf("README.md names %s, which does not exist", p)
		}
	}
	for _, line := range strings.Split(readme, "\n") {
		if strings.HasPrefix(line, "$ ") && strings.Contains(line, "curl") && regexp.MustCompile(`127\.0\.0\.1:(8766|8080)`).MatchString(line) {
			t.Errorf("a README command hard-codes a default port: %s", line)
		}
	}
	// Shell variables a command uses are set by an earlier command.
	defined := map[string]bool{}
	for _, line := range strings.Split(readme, "\n") {
		if !strings.HasPrefix(line, "$ ") {
			continue
		}
		for _, v := range []string{"SIG", "BODY", "B", "S", "TOKEN", "TOK", "RUN"} {
			if regexp.MustCompile(`\$`+v+`\b`).MatchString(line) && !defined[v] {
				t.Errorf("README uses $%s before defining it: %s", v, line)
			}
		}
		if m := regexp.MustCompile(`^\$ (?:export )?([A-Z]+)=`).FindStringSubmatch(line); m != nil {
			defined[m[1]] = true
		}
	}
}
