package callbacks

import (
	"database/sql"
	"embed"
	"encoding/json"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/agentbridge/bridge/store"
)

//go:embed migrations/*.sql
var migrationFS embed.FS

// Migrations are the callback service's tables (versions 0300-0399); the
// daemon applies them with every other subsystem's.
func Migrations() []store.Migration { return store.MustLoad(migrationFS, "migrations") }

// Times are stored with store.Millis and read with store.FromMillis.

func nullInt(p *int) any {
	if p == nil {
		return nil
	}
	return int64(*p)
}

func intPtr(n sql.NullInt64) *int {
	if !n.Valid {
		return nil
	}
	v := int(n.Int64)
	return &v
}

func jsonList(v []string) string {
	if v == nil {
		v = []string{}
	}
	data, _ := json.Marshal(v)
	return string(data)
}

func parseList(s string) []string {
	out := []string{}
	_ = json.Unmarshal([]byte(s), &out)
	return out
}

// isUnique reports a UNIQUE constraint violation.
func isUnique(err error) bool {
	return err != nil && strings.Contains(err.Error(), "UNIQUE constraint failed")
}

// newID returns a time-ordered UUID (v7), so ids sort by creation.
func newID() string {
	id, err := uuid.NewV7()
	if err != nil {
		return uuid.NewString()
	}
	return id.String()
}

// canonicalID parses a path id; anything that is not a UUID cannot exist.
func canonicalID(s string) (string, bool) {
	id, err := uuid.Parse(s)
	if err != nil || len(s) != 36 {
		return "", false
	}
	return id.String(), true
}

// now returns the service clock truncated to what the database keeps.
func (s *Service) nowMs() time.Time { return s.now().UTC().Truncate(time.Millisecond) }

var errNotFound = func(what string) error { return errorf(ENotFound, "%s not found", what) }
