package callbacks

import (
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/agentbridge/bridge/store/broker"
)

// Messaging system types of a subscription. The daemon has one broker (the
// in-process bbolt broker, or Kafka when PLATFORM_KAFKA_BOOTSTRAP_SERVERS is
// set); both values consume from it. KAFKA is accepted so that subscriptions
// written for the original service keep working.
const (
	MessagingInternal = "INTERNAL"
	MessagingKafka    = "KAFKA"
)

// EventSubscription binds the service to broker topics: events on
// TopicOrQueue (a topic, or a prefix with a trailing '*') whose type matches
// EventTypePatterns are delivered to every configuration subscribed to their type.
type EventSubscription struct {
	ID                  string   `json:"id" schema:"format=uuid"`
	Name                string   `json:"name"`
	MessagingSystemType string   `json:"messagingSystemType" schema:"enum=INTERNAL|KAFKA"`
	TopicOrQueue        string   `json:"topicOrQueue" doc:"empty: the listener.topics patterns"`
	ConsumerGroupID     string   `json:"consumerGroupId"`
	EventTypePatterns   []string `json:"eventTypePatterns"`
	Active              bool     `json:"active"`
	// ActiveSince: events published before it are not delivered through this
	// subscription (replay them explicitly), so activating a subscription does
	// not flood endpoints with a topic's retained history.
	ActiveSince time.Time `json:"activeSince"`
	CreatedAt   time.Time `json:"createdAt"`
	UpdatedAt   time.Time `json:"updatedAt"`
}

// SubscriptionInput is the body of create and update (PUT replaces every field).
type SubscriptionInput struct {
	Name                string   `json:"name" schema:"minLength=1,maxLength=200"`
	MessagingSystemType *string  `json:"messagingSystemType,omitempty" schema:"enum=INTERNAL|KAFKA" doc:"default INTERNAL"`
	TopicOrQueue        *string  `json:"topicOrQueue,omitempty" schema:"maxLength=249" doc:"topic name or prefix ending in '*'; empty uses listener.topics"`
	ConsumerGroupID     *string  `json:"consumerGroupId,omitempty" schema:"maxLength=255" doc:"default listener.group-id"`
	EventTypePatterns   []string `json:"eventTypePatterns,omitempty" schema:"maxItems=100,itemMinLength=1,itemMaxLength=200" doc:"empty means every type"`
	Active              *bool    `json:"active,omitempty" doc:"default true"`
}

func (in SubscriptionInput) normalize(s *Settings) (EventSubscription, error) {
	var v validation
	sub := EventSubscription{
		Name:                strings.TrimSpace(in.Name),
		MessagingSystemType: MessagingInternal,
		ConsumerGroupID:     s.Listener.GroupID,
		Active:              true,
	}
	n := utf8.RuneCountInString(sub.Name)
	v.check(n >= 1 && n <= maxNameLen, "name", "must be 1 to %d characters", maxNameLen)
	v.check(utf8.ValidString(sub.Name) && !hasControl(sub.Name), "name", "must be valid UTF-8 without control characters")
	if in.MessagingSystemType != nil {
		sub.MessagingSystemType = strings.ToUpper(strings.TrimSpace(*in.MessagingSystemType))
		v.check(sub.MessagingSystemType == MessagingInternal || sub.MessagingSystemType == MessagingKafka, "messagingSystemType", "must be INTERNAL or KAFKA")
	}
	if in.TopicOrQueue != nil {
		sub.TopicOrQueue = strings.TrimSpace(*in.TopicOrQueue)
		if sub.TopicOrQueue != "" {
			if err := validTopicPattern(sub.TopicOrQueue); err != nil {
				v.add("topicOrQueue", "%v", err)
			}
		}
	}
	if in.ConsumerGroupID != nil {
		sub.ConsumerGroupID = strings.TrimSpace(*in.ConsumerGroupID)
		if err := validGroup(sub.ConsumerGroupID); err != nil {
			v.add("consumerGroupId", "%v", err)
		}
	}
	sub.EventTypePatterns = normalizeTypes(&v, "eventTypePatterns", in.EventTypePatterns, 0)
	if in.Active != nil {
		sub.Active = *in.Active
	}
	return sub, v.err()
}

// topics returns the broker patterns the subscription consumes.
func (sub *EventSubscription) topics(s *Settings) []string {
	if sub.TopicOrQueue != "" {
		return []string{sub.TopicOrQueue}
	}
	return s.Listener.Topics
}

// accepts reports whether a message of topic, published at ts, with
// eventType, is for this subscription.
func (sub *EventSubscription) accepts(s *Settings, topic string, ts time.Time, eventType string) bool {
	if !sub.Active || ts.Before(sub.ActiveSince) {
		return false
	}
	if !matchAny(sub.topics(s), topic) {
		return false
	}
	return len(sub.EventTypePatterns) == 0 || matchAny(sub.EventTypePatterns, eventType)
}

// validTopic applies the broker's topic rules.
func validTopic(t string) error { return broker.ValidateTopic(t) }

// validTopicPattern accepts a topic or a prefix followed by one trailing
// '*', the broker's pattern rules.
func validTopicPattern(p string) error {
	prefix, wildcard := strings.CutSuffix(p, "*")
	if !wildcard {
		if err := broker.ValidateTopic(p); err != nil {
			return fmt.Errorf("must be a topic of 1 to 249 characters a-z A-Z 0-9 . _ - or a prefix ending in '*'")
		}
		return nil
	}
	if len(prefix) > 249 {
		return fmt.Errorf("a topic prefix must be at most 249 characters")
	}
	for i := 0; i < len(prefix); i++ {
		c := prefix[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
			return fmt.Errorf("a topic prefix may contain only a-z A-Z 0-9 . _ - before its trailing '*'")
		}
	}
	return nil
}

// validGroup is stricter than the broker (which takes any UTF-8) so that a
// group name also works as a Kafka group id and in logs.
func validGroup(g string) error {
	if g == "" || len(g) > 255 {
		return fmt.Errorf("must be 1 to 255 characters")
	}
	for i := 0; i < len(g); i++ {
		c := g[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
			return fmt.Errorf("may contain only a-z A-Z 0-9 . _ -")
		}
	}
	return nil
}
