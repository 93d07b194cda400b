package auth

import "errors"

// Reason names why a token or a key set was rejected. Every token rejection
// maps to 401 PF-UNAUTHENTICATED; the reason exists for logs, metrics and
// tests. Reasons are constants that also implement error, so callers can
// write errors.Is(err, auth.ReasonExpired) without any mutable sentinel.
type Reason string

// Error implements error so a Reason can be matched with errors.Is.
func (r Reason) Error() string { return "auth: " + string(r) }

// Token rejection reasons returned by Verifier.Verify.
const (
	ReasonMissing         Reason = "token_missing"
	ReasonTooLarge        Reason = "token_too_large"
	ReasonNotCompact      Reason = "token_not_compact_jws"
	ReasonMalformed       Reason = "token_malformed"
	ReasonAlgorithm       Reason = "algorithm_not_allowed"
	ReasonTokenType       Reason = "token_type_not_bearer"
	ReasonIssuer          Reason = "issuer_not_configured"
	ReasonAudience        Reason = "audience_mismatch"
	ReasonClient          Reason = "client_not_allowed"
	ReasonSubject         Reason = "subject_missing"
	ReasonExpiryMissing   Reason = "expiry_missing"
	ReasonExpired         Reason = "token_expired"
	ReasonNotYetValid     Reason = "token_not_yet_valid"
	ReasonIssuedInFuture  Reason = "token_issued_in_future"
	ReasonKeyIDRequired   Reason = "key_id_required"
	ReasonUnknownKeyID    Reason = "key_id_unknown"
	ReasonKeyMismatch     Reason = "key_algorithm_mismatch"
	ReasonSignature       Reason = "signature_invalid"
	ReasonKeysUnavailable Reason = "keys_unavailable"
)

// Key set (JWKS) failure reasons. They appear wrapped inside a
// ReasonKeysUnavailable or ReasonUnknownKeyID VerifyError, and are returned
// directly by Verifier.Refresh.
const (
	ReasonJWKSFetch       Reason = "jwks_fetch_failed"
	ReasonJWKSRedirect    Reason = "jwks_redirect_refused"
	ReasonJWKSStatus      Reason = "jwks_unexpected_status"
	ReasonJWKSTooLarge    Reason = "jwks_too_large"
	ReasonJWKSTooManyKeys Reason = "jwks_too_many_keys"
	ReasonJWKSInvalid     Reason = "jwks_invalid"
	ReasonJWKSNoKeys      Reason = "jwks_no_usable_keys"
	ReasonJWKSCooldown    Reason = "jwks_refresh_cooldown"
)

// VerifyError is the error returned by Verifier.Verify. It never contains the
// token or any claim value, so it is safe to log.
type VerifyError struct {
	Reason Reason
	// Err is the underlying cause, if any (for example a key fetch failure).
	Err error
}

func (e *VerifyError) Error() string {
	msg := "auth: token rejected: " + string(e.Reason)
	if e.Err != nil {
		msg += ": " + e.Err.Error()
	}
	return msg
}

// Unwrap exposes the cause for errors.Is/As.
func (e *VerifyError) Unwrap() error { return e.Err }

// Is lets errors.Is(err, ReasonX) match on the rejection reason.
func (e *VerifyError) Is(target error) bool {
	r, ok := target.(Reason)
	return ok && r == e.Reason
}

// ReasonOf returns the top-level rejection reason of err, or "" when err is
// not a VerifyError.
func ReasonOf(err error) Reason {
	var ve *VerifyError
	if errors.As(err, &ve) {
		return ve.Reason
	}
	return ""
}

func reject(r Reason, cause error) error { return &VerifyError{Reason: r, Err: cause} }
