#!/bin/sh
# Fake Claude Code of the factory's rate-limit tests: it speaks claude's
# stream-json. Its first $FAKE_LIMITED turns (counted in $FAKE_DIR/turns) are
# refused with a rate limit (or, with FAKE_QUOTA set, a usage quota); later
# turns write feature.txt and succeed.
cat > /dev/null
n=$(($(cat "$FAKE_DIR/turns" 2>/dev/null || echo 0) + 1))
echo $n > "$FAKE_DIR/turns"
sid=6b2e9c40-1d7a-4e3f-8b5c-2a1f0e9d8c7b
echo '{"type":"system","subtype":"init","cwd":"/w","session_id":"'$sid'","tools":[],"mcp_servers":[],"model":"m","permissionMode":"acceptEdits","apiKeySource":"none"}'
if [ "$n" -le "${FAKE_LIMITED:-0}" ]; then
	msg="API Error: Rate limit reached, please slow down"
	[ -n "$FAKE_QUOTA" ] && msg="API Error: You have reached your usage limit"
	echo '{"type":"assistant","message":{"id":"x","model":"<synthetic>","role":"assistant","type":"message","content":[{"type":"text","text":"'"$msg"'"}]},"parent_tool_use_id":null,"session_id":"'$sid'","error":"rate_limit"}'
	echo '{"type":"result","subtype":"success","is_error":true,"num_turns":1,"result":"'"$msg"'","session_id":"'$sid'","total_cost_usd":0,"usage":{"input_tokens":0,"output_tokens":0}}'
	exit 1
fi
echo "turn $n" >> feature.txt
echo '{"type":"result","subtype":"success","is_error":false,"num_turns":1,"result":"done","session_id":"'$sid'","total_cost_usd":0,"usage":{"input_tokens":1,"output_tokens":1}}'
