package trigger

import (
	"net/http"
	"strconv"
	"testing"
	"time"
)

// FuzzVerify: verification never panics, accepts exactly the deliveries
// Sign made for the same id, timestamp and body, and refuses any change
// of them.
func FuzzVerify(f *testing.F) {
	f.Add("msg_1", []byte(`{"a":1}`), int64(0), "v1,x")
	f.Add("", []byte{}, int64(-400), "v1,a v1,b")
	f.Add("id", []byte("\x00\xff"), int64(299), "v2,abc")
	secret, err := newSecret()
	if err != nil {
		f.Fatal(err)
	}
	key, _ := secretKey(secret)
	now := time.Unix(1_800_000_000, 0)
	f.Fuzz(func(t *testing.T, id string, body []byte, offset int64, extra string) {
		at := now.Add(time.Duration(offset%1000) * time.Second)
		sig, err := Sign(secret, id, at, body)
		if err != nil {
			t.Fatal(err)
		}
		h := http.Header{}
		h.Set(HeaderWebhookID, id)
		h.Set(HeaderWebhookTimestamp, strconv.FormatInt(at.Unix(), 10))
		h.Set(HeaderWebhookSignature, extra+" "+sig)
		got, err := verify(h, body, key, now, DefaultTolerance)
		valid := id != "" && len(id) <= MaxWebhookIDLen && printable(id) && now.Sub(at).Abs() <= DefaultTolerance
		if valid && (err != nil || got != id) {
			t.Fatalf("a signed delivery is refused: %v", err)
		}
		if !valid && err == nil {
			t.Fatalf("accepted id %q at offset %d", id, offset)
		}
		if err == nil {
			h.Set(HeaderWebhookSignature, extra)
			if _, err := verify(h, append(body, 'x'), key, now, DefaultTolerance); err == nil {
				t.Fatal("a changed body verifies")
			}
		}
	})
}

func printable(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < 0x21 || s[i] > 0x7e {
			return false
		}
	}
	return true
}
