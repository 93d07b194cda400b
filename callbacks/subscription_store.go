package callbacks

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/agentbridge/bridge/store"
)

const subColumns = `id, name, messaging_system_type, topic_or_queue, consumer_group_id, event_type_patterns,
	active, active_since, created_at, updated_at`

var subResource = &resource{
	name:  "event-subscriptions",
	table: "callback_event_subscriptions",
	fields: map[string]field{
		"id":                  {col: "id", kind: kString, sortable: true},
		"name":                {col: "name", kind: kString, sortable: true},
		"messagingSystemType": {col: "messaging_system_type", kind: kString},
		"topicOrQueue":        {col: "topic_or_queue", kind: kString, sortable: true},
		"consumerGroupId":     {col: "consumer_group_id", kind: kString, sortable: true},
		"eventTypePatterns":   {col: "event_type_patterns", kind: kStrings},
		"active":              {col: "active", kind: kBool},
		"createdAt":           {col: "created_at", kind: kTime, sortable: true},
		"updatedAt":           {col: "updated_at", kind: kTime, sortable: true},
	},
	defaultSort: []SortOrder{{Field: "createdAt"}},
}

func scanSub() ([]any, func() (EventSubscription, error)) {
	var sub EventSubscription
	var patterns string
	var active, since, created, updated int64
	return []any{&sub.ID, &sub.Name, &sub.MessagingSystemType, &sub.TopicOrQueue, &sub.ConsumerGroupID, &patterns,
			&active, &since, &created, &updated}, func() (EventSubscription, error) {
			sub.EventTypePatterns = parseList(patterns)
			sub.Active = active != 0
			sub.ActiveSince, sub.CreatedAt, sub.UpdatedAt = store.FromMicros(since), store.FromMillis(created), store.FromMillis(updated)
			return sub, nil
		}
}

func getSub(ctx context.Context, q store.Querier, id string) (EventSubscription, error) {
	dests, build := scanSub()
	err := q.QueryRowContext(ctx, `SELECT `+subColumns+` FROM callback_event_subscriptions WHERE id = ?`, id).Scan(dests...)
	if errors.Is(err, sql.ErrNoRows) {
		return EventSubscription{}, errNotFound("event subscription " + id)
	}
	if err != nil {
		return EventSubscription{}, fmt.Errorf("callbacks: read subscription: %w", err)
	}
	return build()
}

func listSubs(ctx context.Context, q store.Querier) ([]EventSubscription, error) {
	rows, err := q.QueryContext(ctx, `SELECT `+subColumns+` FROM callback_event_subscriptions`)
	if err != nil {
		return nil, fmt.Errorf("callbacks: list subscriptions: %w", err)
	}
	defer rows.Close()
	var out []EventSubscription
	for rows.Next() {
		dests, build := scanSub()
		if err := rows.Scan(dests...); err != nil {
			return nil, fmt.Errorf("callbacks: list subscriptions: %w", err)
		}
		sub, _ := build()
		out = append(out, sub)
	}
	return out, rows.Err()
}

func (s *Service) createSub(ctx context.Context, in SubscriptionInput) (EventSubscription, error) {
	sub, err := in.normalize(&s.settings)
	if err != nil {
		return sub, err
	}
	now := s.nowMs()
	sub.ID, sub.ActiveSince, sub.CreatedAt, sub.UpdatedAt = newID(), activeNow(s.now()), now, now
	err = s.db.Write(ctx, func(tx *sql.Tx) error {
		_, err := tx.Exec(`INSERT INTO callback_event_subscriptions (`+subColumns+`) VALUES (?,?,?,?,?,?,?,?,?,?)`,
			sub.ID, sub.Name, sub.MessagingSystemType, sub.TopicOrQueue, sub.ConsumerGroupID, jsonList(sub.EventTypePatterns),
			boolInt(sub.Active), store.Micros(sub.ActiveSince), store.Millis(now), store.Millis(now))
		return err
	})
	if isUnique(err) {
		return sub, errorf(EConflict, "a subscription named %q already exists", sub.Name)
	}
	if err != nil {
		return sub, fmt.Errorf("callbacks: create subscription: %w", err)
	}
	s.subsChanged(ctx)
	return sub, nil
}

func (s *Service) updateSub(ctx context.Context, id string, in SubscriptionInput) (EventSubscription, error) {
	sub, err := in.normalize(&s.settings)
	if err != nil {
		return sub, err
	}
	sub.ID = id
	err = s.db.Write(ctx, func(tx *sql.Tx) error {
		old, err := getSub(ctx, tx, id)
		if err != nil {
			return err
		}
		now := s.nowMs()
		sub.CreatedAt, sub.UpdatedAt, sub.ActiveSince = old.CreatedAt, now, old.ActiveSince
		// What the subscription consumes changed: only new events count.
		if sub.Active && (!old.Active || old.TopicOrQueue != sub.TopicOrQueue || old.ConsumerGroupID != sub.ConsumerGroupID ||
			!slices.Equal(old.EventTypePatterns, sub.EventTypePatterns)) {
			sub.ActiveSince = activeNow(s.now())
		}
		_, err = tx.Exec(`UPDATE callback_event_subscriptions SET name = ?, messaging_system_type = ?, topic_or_queue = ?,
			consumer_group_id = ?, event_type_patterns = ?, active = ?, active_since = ?, updated_at = ? WHERE id = ?`,
			sub.Name, sub.MessagingSystemType, sub.TopicOrQueue, sub.ConsumerGroupID, jsonList(sub.EventTypePatterns),
			boolInt(sub.Active), store.Micros(sub.ActiveSince), store.Millis(now), id)
		return err
	})
	if isUnique(err) {
		return sub, errorf(EConflict, "a subscription named %q already exists", sub.Name)
	}
	if err != nil {
		return sub, wrapStore("update subscription", err)
	}
	s.subsChanged(ctx)
	return sub, nil
}

func (s *Service) deleteSub(ctx context.Context, id string) error {
	err := s.db.Write(ctx, func(tx *sql.Tx) error {
		res, err := tx.Exec(`DELETE FROM callback_event_subscriptions WHERE id = ?`, id)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return errNotFound("event subscription " + id)
		}
		return nil
	})
	if err != nil {
		return wrapStore("delete subscription", err)
	}
	s.subsChanged(ctx)
	return nil
}

// activeNow is an activation time. It keeps microseconds, unlike the other
// times, because it is compared with the broker's publish timestamps: an
// event published just before the activation must not pass.
func activeNow(t time.Time) time.Time { return t.UTC().Truncate(time.Microsecond) }

// subsChanged reloads the subscriptions and re-registers the broker
// listeners, so a change takes effect without a restart. The change is
// stored already; a failure here is logged and retried by the next change
// or restart.
func (s *Service) subsChanged(ctx context.Context) {
	subs, err := listSubs(ctx, s.db.Reader())
	if err != nil {
		s.log.Error("callbacks: reload subscriptions", "err", err)
		return
	}
	s.reg.setSubs(subs)
	if err := s.listeners.sync(s); err != nil {
		s.log.Error("callbacks: register subscription listeners", "err", err)
	}
}

// sub reads one event subscription (404 when unknown).
func (s *Service) sub(ctx context.Context, id string) (EventSubscription, error) {
	return getSub(ctx, s.db.Reader(), id)
}

// filterSubs runs a FilterRequest on the event subscriptions.
func (s *Service) filterSubs(ctx context.Context, req FilterRequest) (*PaginationResponse[EventSubscription], error) {
	return filterWith(ctx, s, subResource, subColumns, scanSub, req)
}
