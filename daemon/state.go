package daemon

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// State is daemon.json: how the CLI and IDE panels find a running daemon.
type State struct {
	PID          int       `json:"pid"`
	BridgeAddr   string    `json:"bridge_addr"`
	ServicesAddr string    `json:"services_addr"`
	BridgeURL    string    `json:"bridge_url"`
	ServicesURL  string    `json:"services_url"`
	Version      string    `json:"version"`
	Commit       string    `json:"commit"`
	StartedAt    time.Time `json:"started_at"`
	DataDir      string    `json:"data_dir"`
}

// WriteFileAtomic writes data to path through a temporary file and a rename,
// so readers never see a half-written file.
func WriteFileAtomic(path string, data []byte, perm os.FileMode) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	name := tmp.Name()
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		os.Remove(name)
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		os.Remove(name)
		return err
	}
	if err := tmp.Close(); err != nil {
		os.Remove(name)
		return err
	}
	if err := os.Chmod(name, perm); err != nil {
		os.Remove(name)
		return err
	}
	return os.Rename(name, path)
}

func writeState(path string, s State) error {
	data, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return err
	}
	if err := WriteFileAtomic(path, append(data, '\n'), 0o600); err != nil {
		return fmt.Errorf("write %s: %w", filepath.Base(path), err)
	}
	return nil
}

// ErrNotRunning means no daemon.json exists in the data directory.
var ErrNotRunning = errors.New("no daemon is running for this data directory")

// ReadState reads daemon.json from dataDir.
func ReadState(dataDir string) (State, error) {
	var s State
	data, err := os.ReadFile(filepath.Join(dataDir, DaemonFile))
	if errors.Is(err, os.ErrNotExist) {
		return s, ErrNotRunning
	}
	if err != nil {
		return s, fmt.Errorf("read %s: %w", DaemonFile, err)
	}
	if err := json.Unmarshal(data, &s); err != nil {
		return s, fmt.Errorf("%s is corrupt: %w", DaemonFile, err)
	}
	return s, nil
}
