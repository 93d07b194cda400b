package ingest

import (
	"errors"
	"fmt"

	"github.com/agentbridge/bridge/store/broker"
)

// TopicFor names the destination of provider's events per the spec:
// custom when set, else {prefix}{provider}{suffix}, or {prefix}{suffix}
// without use-provider-as-topic.
func (t TopicConfig) TopicFor(provider string) string {
	switch {
	case t.Custom != "":
		return t.Custom
	case t.UseProviderAsTopic:
		return t.Prefix + provider + t.Suffix
	default:
		return t.Prefix + t.Suffix
	}
}

// checkTopic validates the naming scheme with a representative provider.
func (c *Config) checkTopic() error {
	if !c.Topic.UseProviderAsTopic && c.Topic.Custom == "" && c.Topic.Prefix+c.Topic.Suffix == "" {
		return errors.New("with use-provider-as-topic false, prefix, suffix or custom must be set")
	}
	topic := c.Topic.TopicFor("provider")
	if err := broker.ValidateTopic(topic); err != nil {
		return err
	}
	if c.DLQ.Enabled && topic == c.DLQ.Topic {
		return fmt.Errorf("events would be published to the dead-letter topic %q", topic)
	}
	return nil
}

// topicFor resolves provider's topic and refuses names the broker cannot
// take or that would land in the dead-letter topic (possible only when
// provider-name validation is off).
func (s *Service) topicFor(provider string) (string, error) {
	topic := s.cfg.Topic.TopicFor(provider)
	if err := broker.ValidateTopic(topic); err != nil {
		return "", err
	}
	if s.cfg.DLQ.Enabled && topic == s.cfg.DLQ.Topic {
		return "", fmt.Errorf("%w: %q is the dead-letter topic", broker.ErrInvalidTopic, topic)
	}
	return topic, nil
}
