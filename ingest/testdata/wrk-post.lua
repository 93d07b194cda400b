-- wrk script for the ingestion benchmark: POST a 1 KiB JSON body.
--   wrk -t2 -c64 -d30s --latency -s ingest/testdata/wrk-post.lua \
--       http://127.0.0.1:8080/api/v1/webhook/bench
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
wrk.body = '{"data":"' .. string.rep("x", 1024 - 11) .. '"}'
