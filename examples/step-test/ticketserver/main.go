// Command ticketserver is the local ticket service of the step test
// example in the README ("Test a step of a draft"): POST /tickets answers
// 201 {"id": "T-<n>"} and logs each call, so you see exactly when a test
// really calls it.
package main

import (
	"encoding/json"
	"flag"
	"log"
	"net/http"
	"strconv"
	"sync/atomic"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:8088", "listen address")
	flag.Parse()
	var n atomic.Int64
	http.HandleFunc("POST /tickets", func(w http.ResponseWriter, r *http.Request) {
		var body struct {
			Subject string `json:"subject"`
		}
		_ = json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<20)).Decode(&body)
		id := "T-" + strconv.FormatInt(n.Add(1), 10)
		log.Printf("POST /tickets %q (Idempotency-Key %s) -> %s", body.Subject, r.Header.Get("Idempotency-Key"), id)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		_ = json.NewEncoder(w).Encode(map[string]string{"id": id})
	})
	log.Printf("ticket service on http://%s", *addr)
	log.Fatal(http.ListenAndServe(*addr, nil))
}
