package engine

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/agentbridge/bridge/platform/kernel"
	"github.com/agentbridge/bridge/store/secretbox"
)

// Run values at rest (docs/platform-api.md, "Runs", secret values): the
// state and the events of a run whose program holds a secret anywhere, and
// every held (inbox) event, are stored sealed with the data directory's
// secret box, so a copied bridge.db does not show them. The kernel sees
// the opened values. A column written before sealing existed is plain
// JSON and is read as such; no JSON text starts with the prefix.
const sealedPrefix = "sealed:"

// Associated data of each sealed column: a ciphertext opens only in the
// row it was written for.
const (
	adState = "platform/run/state/"
	adEvent = "platform/run/event/"
	adInbox = "platform/run/inbox/"
	adTask  = "platform/run/task/"
)

// sealer seals and opens the stored JSON of run values.
type sealer struct{ box *secretbox.Box }

// seal answers the column text of plain bound to ad.
func (s sealer) seal(plain []byte, ad string) (string, error) {
	c, err := s.box.Seal(plain, []byte(ad))
	if err != nil {
		return "", fmt.Errorf("engine: seal run value: %w", err)
	}
	return sealedPrefix + base64.RawURLEncoding.EncodeToString(c), nil
}

// maybe seals plain when on, and otherwise answers it as stored text.
func (s sealer) maybe(on bool, plain []byte, ad string) (string, error) {
	if !on {
		return string(plain), nil
	}
	return s.seal(plain, ad)
}

// errSealed: a sealed column that does not open with this data directory's
// key (the key was replaced, or the row was moved or altered).
var errSealed = errors.New("engine: sealed run value does not open with this data directory's key")

// open answers the JSON of a stored column: opened when sealed, as stored
// otherwise.
func (s sealer) open(stored, ad string) ([]byte, error) {
	rest, ok := strings.CutPrefix(stored, sealedPrefix)
	if !ok {
		return []byte(stored), nil
	}
	raw, err := base64.RawURLEncoding.DecodeString(rest)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", errSealed, err)
	}
	plain, err := s.box.Open(raw, []byte(ad))
	if err != nil {
		return nil, fmt.Errorf("%w: %v", errSealed, err)
	}
	return plain, nil
}

func stateAD(run string) string { return adState + run }

func eventAD(run string, seq int64) string { return fmt.Sprintf("%s%s/%d", adEvent, run, seq) }

func inboxAD(run string) string { return adInbox + run }

func taskAD(task string) string { return adTask + task }

// taskSpec answers the stored text of an issued task: sealed when its run's
// program holds secrets (its input may carry them to an executor).
func (s sealer) taskSpec(on bool, t *kernel.TaskSpec) (string, error) {
	plain, err := json.Marshal(t)
	if err != nil {
		return "", fmt.Errorf("engine: encode task: %w", err)
	}
	return s.maybe(on, plain, taskAD(t.TaskID))
}

// openTaskSpec reads the stored spec of task id.
func (s sealer) openTaskSpec(stored, id string, t *kernel.TaskSpec) error {
	plain, err := s.open(stored, taskAD(id))
	if err != nil {
		return fmt.Errorf("engine: stored task %s: %w", id, err)
	}
	if err := json.Unmarshal(plain, t); err != nil {
		return fmt.Errorf("engine: stored task %s: %w", id, err)
	}
	return nil
}
