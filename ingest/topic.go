package ingest

import (
	"errors"
	"fmt"
	"strings"

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
	if sfx := c.Topic.VerifiedSuffix; sfx != "" {
		if strings.HasSuffix(topic, sfx) {
			return fmt.Errorf("provider topics such as %q end with verified-suffix %q", topic, sfx)
		}
		if err := broker.ValidateTopic(topic + sfx); err != nil {
			return fmt.Errorf("verified-suffix: %w", err)
		}
		if c.DLQ.Enabled && topic+sfx == c.DLQ.Topic {
			return fmt.Errorf("verified events would be published to the dead-letter topic %q", c.DLQ.Topic)
		}
	}
	return nil
}

// verifiedTopic is the topic of provider's verified events ("" when off).
func (c *Config) verifiedTopic(provider string) string {
	if c.Topic.VerifiedSuffix == "" {
		return ""
	}
	return c.Topic.TopicFor(provider) + c.Topic.VerifiedSuffix
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
	// A provider named "github.verified" (possible without name
	// validation) must not post into github's verified topic.
	if sfx := s.cfg.Topic.VerifiedSuffix; sfx != "" && strings.HasSuffix(topic, sfx) {
		return "", fmt.Errorf("%w: %q is a verified topic", broker.ErrInvalidTopic, topic)
	}
	if vt := s.cfg.verifiedTopic(provider); vt != "" {
		if err := broker.ValidateTopic(vt); err != nil {
			return "", err
		}
	}
	return topic, nil
}
