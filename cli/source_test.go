package cli

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/agentbridge/bridge/platform/platformtest"
	"github.com/agentbridge/bridge/platform/source"
)

// The README's "a Slack message starts a run", through the commands.
func TestConnectionSourceReceiptCommands(t *testing.T) {
	is := is.New(t)
	d := startDaemon(t)
	d.ok(append([]string{"workflow", "publish"}, writeDefs(t, platformtest.GreetAction, platformtest.NothingAction, platformtest.FlowWorkflow)...)...)
	d.ok("workflow", "activate", "acme/flow")
	is.Equal(d.ok("connection", "list"), "no connections\n")

	const secret = "8f742231b10e8888abcd99yyyzzz85a5"
	t.Setenv("SLACK_SIGNING_SECRET", secret)
	out := d.ok("connection", "create", "slack", "--name", "acme", "--config", "account_id=T0123", "--secret-env", "signing_secret=SLACK_SIGNING_SECRET")
	is.True(strings.Contains(out, "config account_id  T0123"))
	is.True(!strings.Contains(out, secret))
	var conn source.Connection
	d.okJSON(&conn, "connection", "get", strings.Fields(out)[1], "--json")
	is.Equal(conn.Revision, int64(1))
	is.True(strings.Contains(d.ok("connection", "list"), conn.ConnectionID))
	code, _, _ := d.run("connection", "create", "slack", "--name", "x", "--secret-env", "signing_secret=UNSET_VARIABLE_X")
	is.Equal(code, ExitUsage)
	code, _, errw := d.run("connection", "create", "irc", "--name", "x", "--secret", "k=v")
	is.Equal(code, ExitError)
	is.True(strings.Contains(errw, "PF-VALIDATION"))

	is.True(strings.Contains(d.ok("source", "packages"), "slack-events"))
	out = d.ok("source", "create", "--name", "support", "--connection", conn.ConnectionID, "--workflow", "acme/flow", "--mapping", `{"name": input.event.text}`)
	url := regexp.MustCompile(`ingress url\s+(\S+)`).FindStringSubmatch(out)
	is.True(url != nil)
	var src source.Source
	d.okJSON(&src, "source", "get", strings.Fields(out)[1], "--json")
	is.Equal(src.Kind, "run")
	code, _, _ = d.run("source", "create", "--name", "x", "--connection", conn.ID)
	is.Equal(code, ExitUsage)
	code, _, errw = d.run("source", "create", "--name", "x", "--connection", conn.ID, "--workflow", "acme/flow", "--mapping", `{"nom": input.event.text}`)
	is.Equal(code, ExitError)
	is.True(strings.Contains(errw, "/mapping"))

	// Slack delivers a signed message.
	body := `{"team_id":"T0123","type":"event_callback","event_id":"Ev1","event_time":1700000000,"event":{"type":"message","channel":"C1","user":"U1","text":"Ada","ts":"1.2"}}`
	ts := strconv.FormatInt(time.Now().Unix(), 10)
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte("v0:" + ts + ":" + body))
	hr, _ := http.NewRequest("POST", url[1], bytes.NewReader([]byte(body)))
	hr.Header.Set("Content-Type", "application/json")
	hr.Header.Set("X-Slack-Request-Timestamp", ts)
	hr.Header.Set("X-Slack-Signature", "v0="+hex.EncodeToString(m.Sum(nil)))
	res, err := http.DefaultClient.Do(hr)
	is.NoErr(err)
	res.Body.Close()
	is.Equal(res.StatusCode, 200)

	var rs []source.Receipt
	waitFor(t, "the dispatch", func() bool {
		d.okJSON(&rs, "receipt", "list", "--source", src.ID, "--json")
		return len(rs) == 1 && rs[0].Status == "dispatched"
	})
	out = d.ok("receipt", "get", rs[0].ID)
	is.True(strings.Contains(out, "dispatched"))
	is.True(strings.Contains(d.ok("receipt", "list", "--status", "dispatched"), rs[0].ID))
	code, _, errw = d.run("receipt", "retry", rs[0].ID)
	is.Equal(code, ExitError)
	is.True(strings.Contains(errw, "PF-CONFLICT"))

	is.Equal(d.ok("source", "disable", src.ID), "Source "+src.ID+" is disabled\n")
	code, _, errw = d.run("source", "disable", src.ID)
	is.Equal(code, ExitError)
	is.True(strings.Contains(errw, "PF-CONFLICT"))
	is.True(strings.Contains(d.ok("source", "list"), "disabled"))
}
