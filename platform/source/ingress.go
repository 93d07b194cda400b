package source

import (
	"bytes"
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"

	"github.com/agentbridge/bridge/platform/api"
	"github.com/agentbridge/bridge/platform/source/provider"
)

// Ingress problem codes (docs/platform-api.md, "Errors").
const (
	CodeProviderPayload  = "PF-PROVIDER-PAYLOAD"
	CodeProviderConflict = "PF-PROVIDER-CONFLICT"
)

// minSecretScan is the shortest secret the payload scan looks for (a
// shorter one would match ordinary text).
const minSecretScan = 8

// payloadProblem is 422 PF-PROVIDER-PAYLOAD.
func payloadProblem(code, path, format string, args ...any) *api.Error {
	msg := fmt.Sprintf(format, args...)
	return &api.Error{Code: CodeProviderPayload, Message: "the provider event was refused: " + msg,
		Diagnostics: []api.Diagnostic{{Code: code, Path: path, Message: msg}}}
}

// ingressError maps a package's refusal to the ingress problems.
func ingressError(err error) error {
	var ae *provider.AuthError
	var pe *provider.PayloadError
	switch {
	case errors.As(err, &ae):
		return &api.Error{Code: api.CodeUnauthenticated,
			Message:     "the request is not authenticated by the provider's scheme for this source's connection",
			Diagnostics: []api.Diagnostic{{Code: ae.Reason, Message: ae.Detail}}}
	case errors.As(err, &pe):
		return payloadProblem(pe.Code, pe.Path, "%s", pe.Msg)
	case errors.Is(err, provider.ErrTooMany):
		return &api.Error{Code: api.CodeRequestTooLarge,
			Message: fmt.Sprintf("a delivery holds at most %d events", provider.MaxEvents)}
	}
	return err
}

// screen applies the source's rules to normalized events: the pinned
// account, and no connection secret inside a payload (it would be stored
// and mapped into runs).
func screen(src Source, secrets map[string]string, events []provider.Event) error {
	pinned := src.Policy[provider.AccountKey]
	for i, e := range events {
		if pinned != "" && e.AccountID != pinned {
			return payloadProblem("account_mismatch", fmt.Sprintf("/events/%d", i), "the event belongs to another account than the source's pinned account_id")
		}
		for _, v := range secrets {
			if len(v) >= minSecretScan && bytes.Contains(e.Payload, []byte(v)) {
				return payloadProblem("secret_value", fmt.Sprintf("/events/%d", i), "the event carries a secret of the connection; it is not stored")
			}
		}
	}
	return nil
}

// admit stores the events of one delivery as pending receipts in one
// transaction (the admission commit). An event whose identity is stored
// already with the same payload is a provider retry (answered as a
// duplicate, nothing stored); with another payload it conflicts and the
// whole batch is refused (409 PF-PROVIDER-CONFLICT), as is a batch
// holding one identity twice with different payloads.
func (s *Service) admit(ctx context.Context, src Source, events []provider.Event) (IngressAck, error) {
	ack := IngressAck{SourceID: src.ID, Events: make([]AckEvent, 0, len(events))}
	now := s.timestamp()
	type pending struct {
		row receiptRow
		i   int
	}
	var rows []pending
	seen := map[[2]string]string{}
	for _, e := range events {
		sum := sha256.Sum256(e.Payload)
		digest := hex.EncodeToString(sum[:])
		key := [2]string{e.Kind, e.ID}
		if d, ok := seen[key]; ok {
			if d != digest {
				return ack, api.Conflict(CodeProviderConflict, "the delivery holds event %s %s twice with different payloads", e.Kind, e.ID)
			}
			continue
		}
		seen[key] = digest
		id := s.newID()
		sealed, err := s.box.SealString(string(e.Payload), "platform/receipt/"+id)
		if err != nil {
			return ack, fmt.Errorf("source: seal receipt payload: %w", err)
		}
		rows = append(rows, pending{row: receiptRow{Receipt: Receipt{ID: id, SourceID: src.ID, EventKind: e.Kind, EventID: e.ID,
			AccountID: e.AccountID, ReceivedAt: now}, Environment: src.Scope.EnvironmentID, sealed: sealed, digest: digest}, i: len(ack.Events)})
		ack.Events = append(ack.Events, AckEvent{ReceiptID: id, EventKind: e.Kind, EventID: e.ID})
	}
	err := s.db.Write(ctx, func(tx *sql.Tx) error {
		for _, p := range rows {
			cur, err := receiptByIdentity(ctx, tx, src.ID, p.row.EventKind, p.row.EventID)
			switch {
			case err == nil && cur.digest == p.row.digest:
				ack.Events[p.i] = AckEvent{ReceiptID: cur.ID, EventKind: cur.EventKind, EventID: cur.EventID, Duplicate: true}
				continue
			case err == nil:
				return api.Conflict(CodeProviderConflict, "event %s %s conflicts with a stored event of the same identity; the delivery is refused whole",
					p.row.EventKind, p.row.EventID)
			case !errors.Is(err, errNotFound):
				return err
			}
			if err := insertReceipt(ctx, tx, p.row); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return IngressAck{}, err
	}
	return ack, nil
}
