package store

import (
	"database/sql"
	"errors"
	"testing"
)

func TestOneRow(t *testing.T) {
	notFound := errors.New("no such thing")
	if err := OneRow(nil, notFound, "read thing"); err != nil {
		t.Fatalf("nil error: got %v", err)
	}
	if err := OneRow(sql.ErrNoRows, notFound, "read thing"); err != notFound {
		t.Fatalf("no rows: got %v, want the caller's not-found error", err)
	}
	cause := errors.New("disk I/O error")
	err := OneRow(cause, notFound, "read thing")
	if !errors.Is(err, cause) || err.Error() != "read thing: disk I/O error" {
		t.Fatalf("other error: got %v", err)
	}
}
