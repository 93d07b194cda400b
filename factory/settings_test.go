package factory

import (
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/agentbridge/bridge/config"
)

func loadWithEnv(t *testing.T, yaml string, env map[string]string) (Settings, error) {
	t.Helper()
	f, err := config.Parse("config.yaml", []byte(yaml))
	if err != nil {
		t.Fatal(err)
	}
	f.LookupEnv = func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	return LoadSettings(f)
}

func TestSettingsBounds(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	s, err := loadWithEnv(t, "", nil)
	is.NoErr(err)
	is.Equal(s, DefaultSettings())
	is.Equal(s.RepairAttempts, 2)
	is.Equal(s.MaxActiveRuns, 2)
	for v, ok := range map[string]bool{"0": true, "3": true, "-1": false, "4": false} {
		s, err := loadWithEnv(t, "factory:\n  repair-attempts: 1\n", map[string]string{"FACTORY_REPAIR_ATTEMPTS": v})
		if ok != (err == nil) {
			t.Errorf("FACTORY_REPAIR_ATTEMPTS=%s: err %v", v, err)
		}
		if ok && s.RepairAttempts != int(v[0]-'0') {
			t.Errorf("FACTORY_REPAIR_ATTEMPTS=%s: got %d", v, s.RepairAttempts)
		}
	}
	s, err = loadWithEnv(t, "factory:\n  command-timeout: 1s\n  agent-timeout: 24h\n  max-active-runs: 64\n", nil)
	is.NoErr(err)
	is.Equal(s.CommandTimeout.D(), time.Second)
	for _, bad := range []string{"command-timeout: 999ms", "agent-timeout: 25h", "max-active-runs: 0", "max-active-runs: 65", "repair-attempts: 4", "rate-limit-backoff: 2h"} {
		if _, err := loadWithEnv(t, "factory:\n  "+bad+"\n", nil); err == nil {
			t.Errorf("%s accepted", bad)
		}
	}
}
