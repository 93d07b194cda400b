package callbacks

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/agentbridge/bridge/store"
)

const configColumns = `id, name, url, host, http_method, status, status_reason, subscribed_event_types,
	signature_enabled, signature_scheme, signature_header, secret_sealed, previous_secret_sealed,
	previous_secret_until, secret_updated_at, max_retries, retry_delay_ms, timeout_ms, failure_threshold,
	version, created_at, updated_at`

var configResource = &resource{
	name:  "callback-configurations",
	table: "callback_configurations",
	fields: map[string]field{
		"id":                   {col: "id", kind: kString, sortable: true},
		"name":                 {col: "name", kind: kString, sortable: true},
		"url":                  {col: "url", kind: kString},
		"httpMethod":           {col: "http_method", kind: kString},
		"status":               {col: "status", kind: kString, sortable: true},
		"subscribedEventTypes": {col: "subscribed_event_types", kind: kStrings},
		"signatureEnabled":     {col: "signature_enabled", kind: kBool},
		"signatureScheme":      {col: "signature_scheme", kind: kString},
		"createdAt":            {col: "created_at", kind: kTime, sortable: true},
		"updatedAt":            {col: "updated_at", kind: kTime, sortable: true},
	},
	defaultSort: []SortOrder{{Field: "createdAt"}},
}

// secretAD binds a sealed secret to its configuration, so a ciphertext
// copied to another row does not open.
func secretAD(id string) string { return "callbacks/configuration/" + id + "/secret" }

// scanConfig scans a row; secrets stay sealed (openSecrets opens them).
func scanConfig() ([]any, func() (Configuration, error)) {
	var c Configuration
	var types string
	var sigEnabled, created, updated, secretAt int64
	var maxRetries, retryDelay, timeout, failure sql.NullInt64
	dests := []any{&c.ID, &c.Name, &c.URL, &c.host, &c.HTTPMethod, &c.Status, &c.StatusReason, &types,
		&sigEnabled, &c.SignatureScheme, &c.SignatureHeader, &c.sealed, &c.prevSealed,
		&c.prevUntilRaw, &secretAt, &maxRetries, &retryDelay, &timeout, &failure,
		&c.Version, &created, &updated}
	return dests, func() (Configuration, error) {
		c.SubscribedEventTypes = parseList(types)
		c.SignatureEnabled = sigEnabled != 0
		c.MaxRetries, c.RetryDelayMs, c.TimeoutMs, c.FailureThreshold = intPtr(maxRetries), intPtr(retryDelay), intPtr(timeout), intPtr(failure)
		c.CreatedAt, c.UpdatedAt = store.FromMillis(created), store.FromMillis(updated)
		c.SecretSet = c.sealed != ""
		c.SecretUpdatedAt = store.OptFromMillis(secretAt)
		if c.prevSealed != "" {
			c.PreviousSecretValidUntil = store.OptFromMillis(c.prevUntilRaw)
		}
		return c, nil
	}
}

func getConfig(ctx context.Context, q store.Querier, id string) (Configuration, error) {
	dests, build := scanConfig()
	err := q.QueryRowContext(ctx, `SELECT `+configColumns+` FROM callback_configurations WHERE id = ?`, id).Scan(dests...)
	if errors.Is(err, sql.ErrNoRows) {
		return Configuration{}, errNotFound("callback configuration " + id)
	}
	if err != nil {
		return Configuration{}, fmt.Errorf("callbacks: read configuration: %w", err)
	}
	return build()
}

func listConfigs(ctx context.Context, q store.Querier) ([]Configuration, error) {
	rows, err := q.QueryContext(ctx, `SELECT `+configColumns+` FROM callback_configurations`)
	if err != nil {
		return nil, fmt.Errorf("callbacks: list configurations: %w", err)
	}
	defer rows.Close()
	var out []Configuration
	for rows.Next() {
		dests, build := scanConfig()
		if err := rows.Scan(dests...); err != nil {
			return nil, fmt.Errorf("callbacks: list configurations: %w", err)
		}
		c, _ := build()
		out = append(out, c)
	}
	return out, rows.Err()
}

// openSecrets decrypts the sealed secrets into memory for signing.
func (s *Service) openSecrets(c *Configuration) error {
	c.secret, c.prevSecret = nil, nil
	if c.sealed != "" {
		plain, err := s.box.OpenString(c.sealed, secretAD(c.ID))
		if err != nil {
			return fmt.Errorf("callbacks: open secret of configuration %s: %w", c.ID, err)
		}
		c.secret = secret(plain)
	}
	if c.prevSealed != "" {
		plain, err := s.box.OpenString(c.prevSealed, secretAD(c.ID))
		if err != nil {
			return fmt.Errorf("callbacks: open previous secret of configuration %s: %w", c.ID, err)
		}
		c.prevSecret = secret(plain)
	}
	return nil
}

// authorizedIn checks host against the allow-list inside a transaction, so
// a configuration cannot be registered against a domain being removed.
func authorizedIn(ctx context.Context, tx *sql.Tx, host string) error {
	ds, err := listDomains(ctx, tx)
	if err != nil {
		return err
	}
	if !hostAuthorized(ds, host) {
		return errorf(EDomainNotAuthorized, "the domain %s is not authorized: add it with POST /api/v1/authorized-domains first", host)
	}
	return nil
}

func (s *Service) createConfig(ctx context.Context, in ConfigurationInput) (Configuration, error) {
	ch, err := in.normalize(nil)
	if err != nil {
		return Configuration{}, err
	}
	c := ch.cfg
	now := s.nowMs()
	c.ID, c.Version, c.CreatedAt, c.UpdatedAt = newID(), 1, now, now
	var secretAt int64
	if ch.newSecret != nil {
		if c.sealed, err = s.box.SealString(*ch.newSecret, secretAD(c.ID)); err != nil {
			return Configuration{}, fmt.Errorf("callbacks: seal secret: %w", err)
		}
		secretAt = store.Millis(now)
	}
	err = s.db.Write(ctx, func(tx *sql.Tx) error {
		if err := authorizedIn(ctx, tx, c.host); err != nil {
			return err
		}
		_, err := tx.Exec(`INSERT INTO callback_configurations (`+configColumns+`) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)`,
			c.ID, c.Name, c.URL, c.host, c.HTTPMethod, c.Status, "", jsonList(c.SubscribedEventTypes),
			boolInt(c.SignatureEnabled), c.SignatureScheme, c.SignatureHeader, c.sealed, "",
			0, secretAt, nullInt(c.MaxRetries), nullInt(c.RetryDelayMs), nullInt(c.TimeoutMs), nullInt(c.FailureThreshold),
			c.Version, store.Millis(now), store.Millis(now))
		return err
	})
	if isUnique(err) {
		return Configuration{}, errorf(EConflict, "a configuration named %q already exists", c.Name)
	}
	if err != nil {
		return Configuration{}, wrapStore("create configuration", err)
	}
	return s.reloadConfig(ctx, c.ID)
}

func (s *Service) updateConfig(ctx context.Context, id string, in ConfigurationInput) (Configuration, error) {
	err := s.db.Write(ctx, func(tx *sql.Tx) error {
		old, err := getConfig(ctx, tx, id)
		if err != nil {
			return err
		}
		if err := s.openSecrets(&old); err != nil {
			return err
		}
		ch, err := in.normalize(&old)
		if err != nil {
			return err
		}
		c := ch.cfg
		if err := authorizedIn(ctx, tx, c.host); err != nil {
			return err
		}
		now := s.nowMs()
		sealed, prevSealed, prevUntil := old.sealed, old.prevSealed, old.prevUntilRaw
		secretAt := int64(0)
		if old.SecretUpdatedAt != nil {
			secretAt = store.Millis(*old.SecretUpdatedAt)
		}
		switch {
		case ch.clearSecret:
			sealed, prevSealed, prevUntil, secretAt = "", "", 0, store.Millis(now)
		case ch.newSecret != nil && *ch.newSecret != string(old.secret):
			newSealed, err := s.box.SealString(*ch.newSecret, secretAD(id))
			if err != nil {
				return fmt.Errorf("seal secret: %w", err)
			}
			// The replaced secret keeps signing during the grace period so
			// that receivers can roll over; a scheme change has no grace
			// because the old secret's format belongs to the old scheme.
			prevSealed, prevUntil = "", 0
			grace := s.settings.Signature.RotationGrace.D()
			if old.sealed != "" && grace > 0 && old.SignatureScheme == c.SignatureScheme {
				prevSealed, prevUntil = old.sealed, store.Millis(now.Add(grace))
			}
			sealed, secretAt = newSealed, store.Millis(now)
		case old.SignatureScheme != c.SignatureScheme:
			prevSealed, prevUntil = "", 0
		}
		reason := ""
		if c.Status == old.Status {
			reason = old.StatusReason
		}
		_, err = tx.Exec(`UPDATE callback_configurations SET name = ?, url = ?, host = ?, http_method = ?, status = ?, status_reason = ?,
			subscribed_event_types = ?, signature_enabled = ?, signature_scheme = ?, signature_header = ?, secret_sealed = ?,
			previous_secret_sealed = ?, previous_secret_until = ?, secret_updated_at = ?, max_retries = ?, retry_delay_ms = ?,
			timeout_ms = ?, failure_threshold = ?, version = version + 1, updated_at = ? WHERE id = ?`,
			c.Name, c.URL, c.host, c.HTTPMethod, c.Status, reason, jsonList(c.SubscribedEventTypes),
			boolInt(c.SignatureEnabled), c.SignatureScheme, c.SignatureHeader, sealed, prevSealed, prevUntil, secretAt,
			nullInt(c.MaxRetries), nullInt(c.RetryDelayMs), nullInt(c.TimeoutMs), nullInt(c.FailureThreshold), store.Millis(now), id)
		return err
	})
	if isUnique(err) {
		return Configuration{}, errorf(EConflict, "a configuration named %q already exists", in.Name)
	}
	if err != nil {
		return Configuration{}, wrapStore("update configuration", err)
	}
	return s.reloadConfig(ctx, id)
}

func (s *Service) deleteConfig(ctx context.Context, id string) error {
	err := s.db.Write(ctx, func(tx *sql.Tx) error {
		res, err := tx.Exec(`DELETE FROM callback_configurations WHERE id = ?`, id)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return errNotFound("callback configuration " + id)
		}
		return nil
	})
	if err != nil {
		return wrapStore("delete configuration", err)
	}
	s.reg.deleteConfig(id)
	s.disp.configChanged(id)
	return nil
}

// setStatus changes a configuration's status on the service's own initiative
// (a 410 answer, a breaker that keeps tripping).
func (s *Service) setStatus(ctx context.Context, id, status, reason string) (bool, error) {
	changed := false
	err := s.db.Write(ctx, func(tx *sql.Tx) error {
		res, err := tx.Exec(`UPDATE callback_configurations SET status = ?, status_reason = ?, version = version + 1, updated_at = ?
			WHERE id = ? AND status <> ?`, status, reason, store.Millis(s.nowMs()), id, status)
		if err != nil {
			return err
		}
		n, _ := res.RowsAffected()
		changed = n > 0
		return nil
	})
	if err != nil {
		return false, fmt.Errorf("callbacks: set status of %s: %w", id, err)
	}
	if changed {
		if _, err := s.reloadConfig(ctx, id); err != nil {
			return true, err
		}
	}
	return changed, nil
}

// reloadConfig reads a configuration after a change, refreshes the
// dispatcher's copy and returns it.
func (s *Service) reloadConfig(ctx context.Context, id string) (Configuration, error) {
	c, err := getConfig(ctx, s.db.Reader(), id)
	if err != nil {
		return c, err
	}
	if err := s.openSecrets(&c); err != nil {
		return c, err
	}
	s.reg.putConfig(c)
	s.disp.configChanged(id)
	return c, nil
}

// config reads one callback configuration (404 when unknown).
func (s *Service) config(ctx context.Context, id string) (Configuration, error) {
	return getConfig(ctx, s.db.Reader(), id)
}

// filterConfigs runs a FilterRequest on the callback configurations.
func (s *Service) filterConfigs(ctx context.Context, req FilterRequest) (*PaginationResponse[Configuration], error) {
	return filterWith(ctx, s, configResource, configColumns, scanConfig, req)
}
