package callbacks

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"
)

// TestSecretsAreRedacted: a configuration's secret cannot leak through
// fmt, slog or JSON even if one is printed by mistake.
func TestSecretsAreRedacted(t *testing.T) {
	t.Parallel()
	c := Configuration{ID: "x", secret: secret(testSecret), prevSecret: secret(testSecret)}
	var buf bytes.Buffer
	log := slog.New(slog.NewJSONHandler(&buf, nil))
	log.Info("cfg", "secret", c.secret, "c", c)
	slog.New(slog.NewTextHandler(&buf, nil)).Info("cfg", "secret", c.secret)
	data, _ := json.Marshal(c)
	for _, s := range []string{
		fmt.Sprint(c.secret), fmt.Sprintf("%v %+v %#v %s %q %x", c.secret, c, c, c.secret, c.secret, c.secret),
		buf.String(), string(data),
	} {
		if strings.Contains(s, testSecret) || strings.Contains(s, fmt.Sprintf("%x", testSecret)) {
			t.Fatalf("secret leaked: %s", s)
		}
	}
}

// TestSecretsNeverLogged runs a signed delivery with a debug logger and
// checks the whole log.
func TestSecretsNeverLogged(t *testing.T) {
	t.Parallel()
	is := newIs(t)
	var buf safeBuffer
	h := startHarness(&harness{t: t, dir: t.TempDir(), yaml: fastYAML,
		logger: slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	rc := newReceiver(t, nil)
	h.authorize("127.0.0.1")
	h.createConfig(map[string]any{"name": "c", "url": rc.URL, "subscribedEventTypes": []string{"x"}, "signatureEnabled": true, "secret": testSecret})
	h.must(422, "POST", pathConfigs, map[string]any{"name": "c2", "url": rc.URL, "subscribedEventTypes": []string{"x"},
		"signatureEnabled": true, "signatureScheme": SchemeStandardWebhooks, "secret": testSecret}, nil)
	h.createSub(map[string]any{"name": "s", "topicOrQueue": "t"})
	h.publish("t", "x", "", `{}`)
	waitFor(t, 15*time.Second, "delivery", func() bool { return rc.count() == 1 })
	h.close()
	is.True(!strings.Contains(buf.String(), testSecret))
	is.True(strings.Contains(buf.String(), "callbacks: listening")) // the logger was in use
}
