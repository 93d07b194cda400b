package decision

import (
	"fmt"
	"strconv"
	"strings"
)

// maxTestLen bounds one cell's source so pathological input stays cheap.
const maxTestLen = 4096

// tri is FEEL's three-valued logic result.
type tri int8

const (
	triFalse tri = iota
	triTrue
	triNull
)

func boolTri(b bool) tri {
	if b {
		return triTrue
	}
	return triFalse
}

type testKind uint8

const (
	tAny     testKind = iota // -
	tIsNull                  // null, = null
	tNotNull                 // != null
	tEq                      // literal, = literal
	tNe                      // != literal
	tLt
	tLe
	tGt
	tGe
	tRange // interval
	tOr    // comma list
	tNot   // not(list)
)

// test is a pre-parsed unary test. lo holds the literal of comparisons and the
// lower endpoint of intervals.
type test struct {
	kind           testKind
	loOpen, hiOpen bool
	lo, hi         value
	sub            []test
}

// match evaluates the test against an input value with FEEL semantics:
// equality with null is false (null = null is true), ordering with null or
// between incomparable values is null, a list is true if any member is true,
// and not() inverts true/false while keeping null.
func (t *test) match(v *value) tri {
	switch t.kind {
	case tAny:
		return triTrue
	case tIsNull:
		return boolTri(v.k == kNull)
	case tNotNull:
		return boolTri(v.k != kNull)
	case tEq, tNe:
		eq, ok := equal(v, &t.lo)
		if !ok {
			return triNull
		}
		return boolTri(eq == (t.kind == tEq))
	case tLt, tLe, tGt, tGe:
		if v.k == kNull {
			return triNull
		}
		c, ok := compare(v, &t.lo)
		if !ok {
			return triNull
		}
		switch t.kind {
		case tLt:
			return boolTri(c < 0)
		case tLe:
			return boolTri(c <= 0)
		case tGt:
			return boolTri(c > 0)
		default:
			return boolTri(c >= 0)
		}
	case tRange:
		if v.k == kNull {
			return triNull
		}
		c, ok := compare(v, &t.lo)
		if !ok {
			return triNull
		}
		if c < 0 || (c == 0 && t.loOpen) {
			return triFalse
		}
		c, ok = compare(v, &t.hi)
		if !ok {
			return triNull
		}
		return boolTri(c < 0 || (c == 0 && !t.hiOpen))
	case tOr:
		res := triFalse
		for i := range t.sub {
			switch t.sub[i].match(v) {
			case triTrue:
				return triTrue
			case triNull:
				res = triNull
			}
		}
		return res
	case tNot:
		switch t.sub[0].match(v) {
		case triTrue:
			return triFalse
		case triFalse:
			return triTrue
		}
		return triNull
	}
	return triNull
}

// syntaxError is a unary-test parse error at a byte offset of the cell text.
type syntaxError struct {
	off int
	msg string
}

func (e *syntaxError) Error() string { return fmt.Sprintf("at offset %d: %s", e.off, e.msg) }

type tokKind uint8

const (
	tokEOF tokKind = iota
	tokNum
	tokStr
	tokIdent
	tokLParen
	tokRParen
	tokLBrack
	tokRBrack
	tokComma
	tokDotDot
	tokLt
	tokLe
	tokGt
	tokGe
	tokEq
	tokNe
	tokAt
)

type token struct {
	kind tokKind
	off  int
	text string // number text, decoded string, or identifier
}

func (t token) describe() string {
	switch t.kind {
	case tokEOF:
		return "end of test"
	case tokNum:
		return "number " + t.text
	case tokStr:
		return "string " + strconv.Quote(clip(t.text))
	case tokIdent:
		return "name " + strconv.Quote(clip(t.text))
	}
	return strconv.Quote(t.text)
}

// lexer produces tokens on demand from one cell's source.
type lexer struct {
	src string
	pos int
	tok token // current token
}

func (l *lexer) fail(off int, format string, args ...any) error {
	return &syntaxError{off: off, msg: fmt.Sprintf(format, args...)}
}

// next advances to the following token.
func (l *lexer) next() error {
	s := l.src
	for l.pos < len(s) && (s[l.pos] == ' ' || s[l.pos] == '\t' || s[l.pos] == '\n' || s[l.pos] == '\r') {
		l.pos++
	}
	start := l.pos
	if l.pos >= len(s) {
		l.tok = token{kind: tokEOF, off: start}
		return nil
	}
	c := s[l.pos]
	two := ""
	if l.pos+1 < len(s) {
		two = s[l.pos : l.pos+2]
	}
	simple := func(k tokKind, n int) error {
		l.tok = token{kind: k, off: start, text: s[start : start+n]}
		l.pos += n
		return nil
	}
	switch {
	case two == "<=":
		return simple(tokLe, 2)
	case two == ">=":
		return simple(tokGe, 2)
	case two == "!=":
		return simple(tokNe, 2)
	case two == "..":
		return simple(tokDotDot, 2)
	case c == '<':
		return simple(tokLt, 1)
	case c == '>':
		return simple(tokGt, 1)
	case c == '=':
		return simple(tokEq, 1)
	case c == '(':
		return simple(tokLParen, 1)
	case c == ')':
		return simple(tokRParen, 1)
	case c == '[':
		return simple(tokLBrack, 1)
	case c == ']':
		return simple(tokRBrack, 1)
	case c == ',':
		return simple(tokComma, 1)
	case c == '@':
		return simple(tokAt, 1)
	case c == '"':
		return l.lexString()
	case isDigit(c) || (c == '.' && l.pos+1 < len(s) && isDigit(s[l.pos+1])) ||
		(c == '-' && l.pos+1 < len(s) && (isDigit(s[l.pos+1]) || s[l.pos+1] == '.')):
		return l.lexNumber()
	case isIdentStart(c):
		for l.pos < len(s) && isIdentPart(s[l.pos]) {
			l.pos++
		}
		l.tok = token{kind: tokIdent, off: start, text: s[start:l.pos]}
		return nil
	case c == '-':
		return l.fail(start, "unexpected '-' (a lone - means any value and must be the whole test)")
	}
	return l.fail(start, "unexpected character %q", rune(c))
}

func isIdentStart(c byte) bool { return c == '_' || (c|0x20 >= 'a' && c|0x20 <= 'z') }
func isIdentPart(c byte) bool  { return isIdentStart(c) || isDigit(c) }

// lexNumber reads [-]digits[.digits] | [-].digits; "1..5" lexes as 1, .., 5.
func (l *lexer) lexNumber() error {
	s := l.src
	start := l.pos
	if s[l.pos] == '-' {
		l.pos++
	}
	for l.pos < len(s) && isDigit(s[l.pos]) {
		l.pos++
	}
	if l.pos+1 < len(s) && s[l.pos] == '.' && isDigit(s[l.pos+1]) {
		l.pos++
		for l.pos < len(s) && isDigit(s[l.pos]) {
			l.pos++
		}
	}
	if l.pos < len(s) && (isIdentStart(s[l.pos]) || (s[l.pos] == '.' && (l.pos+1 >= len(s) || s[l.pos+1] != '.'))) {
		return l.fail(start, "malformed number %q", clip(s[start:min(len(s), l.pos+1)]))
	}
	l.tok = token{kind: tokNum, off: start, text: s[start:l.pos]}
	return nil
}

// lexString reads a double-quoted FEEL string with \" \\ \n \r \t \' \uXXXX escapes.
func (l *lexer) lexString() error {
	s := l.src
	start := l.pos
	l.pos++
	var b strings.Builder
	escaped := false // only build a new string when the text has escapes
	plainFrom := l.pos
	for l.pos < len(s) {
		switch s[l.pos] {
		case '"':
			text := s[plainFrom:l.pos]
			if escaped {
				b.WriteString(text)
				text = b.String()
			}
			l.pos++
			l.tok = token{kind: tokStr, off: start, text: text}
			return nil
		case '\\':
			escaped = true
			b.WriteString(s[plainFrom:l.pos])
			if l.pos+1 >= len(s) {
				return l.fail(l.pos, "unterminated escape")
			}
			e := s[l.pos+1]
			l.pos += 2
			switch e {
			case '"', '\\', '\'':
				b.WriteByte(e)
			case 'n':
				b.WriteByte('\n')
			case 'r':
				b.WriteByte('\r')
			case 't':
				b.WriteByte('\t')
			case 'u':
				if l.pos+4 > len(s) {
					return l.fail(l.pos-2, "short \\u escape")
				}
				n, err := strconv.ParseUint(s[l.pos:l.pos+4], 16, 32)
				if err != nil {
					return l.fail(l.pos-2, "invalid \\u escape")
				}
				b.WriteRune(rune(n))
				l.pos += 4
			default:
				return l.fail(l.pos-2, "unknown escape \\%c", e)
			}
			plainFrom = l.pos
		default:
			l.pos++
		}
	}
	return l.fail(start, "unterminated string")
}

// parser builds a test for a column of a given type.
type parser struct {
	lex lexer
	typ colType
}

// parseUnaryTests parses one input entry (a cell of `when`) for a column type.
func parseUnaryTests(src string, typ colType) (test, error) {
	if len(src) > maxTestLen {
		return test{}, &syntaxError{off: 0, msg: fmt.Sprintf("test is longer than %d bytes", maxTestLen)}
	}
	trimmed := strings.TrimSpace(src)
	if trimmed == "" {
		return test{}, &syntaxError{off: 0, msg: "empty test (use - to match any value)"}
	}
	if trimmed == "-" {
		return test{kind: tAny}, nil
	}
	p := &parser{lex: lexer{src: src}, typ: typ}
	if err := p.lex.next(); err != nil {
		return test{}, err
	}
	var t test
	if p.lex.tok.kind == tokIdent && p.lex.tok.text == "not" {
		if err := p.advance(); err != nil {
			return test{}, err
		}
		if err := p.expect(tokLParen, "'(' after not"); err != nil {
			return test{}, err
		}
		inner, err := p.parseList()
		if err != nil {
			return test{}, err
		}
		if err := p.expect(tokRParen, "')' closing not("); err != nil {
			return test{}, err
		}
		t = test{kind: tNot, sub: []test{inner}}
		if p.lex.tok.kind != tokEOF {
			return test{}, p.unexpected("end of test (not(...) must be the whole test)")
		}
	} else {
		var err error
		if t, err = p.parseList(); err != nil {
			return test{}, err
		}
	}
	if p.lex.tok.kind != tokEOF {
		return test{}, p.unexpected("',' or end of test")
	}
	return t, nil
}

func (p *parser) advance() error { return p.lex.next() }

func (p *parser) unexpected(want string) error {
	return p.lex.fail(p.lex.tok.off, "expected %s, found %s", want, p.lex.tok.describe())
}

func (p *parser) expect(k tokKind, want string) error {
	if p.lex.tok.kind != k {
		return p.unexpected(want)
	}
	return p.advance()
}

func (p *parser) parseList() (test, error) {
	first, err := p.parsePositive()
	if err != nil {
		return test{}, err
	}
	if p.lex.tok.kind != tokComma {
		return first, nil
	}
	items := []test{first}
	for p.lex.tok.kind == tokComma {
		if err := p.advance(); err != nil {
			return test{}, err
		}
		t, err := p.parsePositive()
		if err != nil {
			return test{}, err
		}
		items = append(items, t)
	}
	return test{kind: tOr, sub: items}, nil
}

func (p *parser) parsePositive() (test, error) {
	tok := p.lex.tok
	switch tok.kind {
	case tokLt, tokLe, tokGt, tokGe:
		if err := p.advance(); err != nil {
			return test{}, err
		}
		if !p.typ.ordered() {
			return test{}, p.lex.fail(tok.off, "%s values cannot be compared with %s", p.typ, tok.text)
		}
		v, err := p.parseLiteral(false)
		if err != nil {
			return test{}, err
		}
		k := tLt
		switch tok.kind {
		case tokLe:
			k = tLe
		case tokGt:
			k = tGt
		case tokGe:
			k = tGe
		}
		return test{kind: k, lo: v}, nil
	case tokEq, tokNe:
		if err := p.advance(); err != nil {
			return test{}, err
		}
		v, err := p.parseLiteral(true)
		if err != nil {
			return test{}, err
		}
		eq := tok.kind == tokEq
		switch {
		case v.k == kNull && eq:
			return test{kind: tIsNull}, nil
		case v.k == kNull:
			return test{kind: tNotNull}, nil
		case eq:
			return test{kind: tEq, lo: v}, nil
		}
		return test{kind: tNe, lo: v}, nil
	case tokLBrack, tokLParen, tokRBrack:
		return p.parseInterval()
	}
	v, err := p.parseLiteral(true)
	if err != nil {
		return test{}, err
	}
	if v.k == kNull {
		return test{kind: tIsNull}, nil
	}
	return test{kind: tEq, lo: v}, nil
}

// parseInterval reads [a..b], (a..b), ]a..b[ and mixed forms.
func (p *parser) parseInterval() (test, error) {
	open := p.lex.tok
	if err := p.advance(); err != nil {
		return test{}, err
	}
	if !p.typ.ordered() {
		return test{}, p.lex.fail(open.off, "%s values cannot form an interval", p.typ)
	}
	lo, err := p.parseLiteral(false)
	if err != nil {
		return test{}, err
	}
	if err := p.expect(tokDotDot, "'..' in interval"); err != nil {
		return test{}, err
	}
	hi, err := p.parseLiteral(false)
	if err != nil {
		return test{}, err
	}
	closeTok := p.lex.tok
	if closeTok.kind != tokRBrack && closeTok.kind != tokRParen && closeTok.kind != tokLBrack {
		return test{}, p.unexpected("']', ')' or '[' closing the interval")
	}
	if err := p.advance(); err != nil {
		return test{}, err
	}
	t := test{
		kind:   tRange,
		lo:     lo,
		hi:     hi,
		loOpen: open.kind != tokLBrack,
		hiOpen: closeTok.kind != tokRBrack,
	}
	c, ok := compare(&lo, &hi)
	switch {
	case !ok:
		return test{}, p.lex.fail(open.off, "interval endpoints are not comparable (%s vs %s)", describeKind(&lo), describeKind(&hi))
	case c > 0:
		return test{}, p.lex.fail(open.off, "interval lower endpoint is greater than the upper endpoint")
	case c == 0 && (t.loOpen || t.hiOpen):
		return test{}, p.lex.fail(open.off, "interval is empty")
	}
	return t, nil
}

func describeKind(v *value) string {
	if v.k == kDateTime {
		if v.zoned {
			return "date and time with offset"
		}
		return "local date and time"
	}
	return v.k.String()
}

// parseLiteral reads one literal and checks it against the column type.
func (p *parser) parseLiteral(allowNull bool) (value, error) {
	tok := p.lex.tok
	var v value
	switch tok.kind {
	case tokNum:
		var err error
		if v, err = numberFromDecimal(tok.text, false); err != nil {
			return value{}, p.lex.fail(tok.off, "%v", err)
		}
	case tokStr:
		v = value{k: kString, s: tok.text}
	case tokAt:
		if err := p.advance(); err != nil {
			return value{}, err
		}
		if p.lex.tok.kind != tokStr {
			return value{}, p.unexpected("string after @")
		}
		var err error
		if v, err = temporalLiteral(p.lex.tok.text); err != nil {
			return value{}, p.lex.fail(tok.off, "%v", err)
		}
	case tokIdent:
		var err error
		if v, err = p.parseNamedLiteral(); err != nil {
			return value{}, err
		}
		if v.k == kNull && !allowNull {
			return value{}, p.lex.fail(tok.off, "null cannot be used here")
		}
		// parseNamedLiteral has already advanced past the literal.
		return v, p.checkType(tok, &v)
	default:
		return value{}, p.unexpected("a literal")
	}
	if err := p.advance(); err != nil {
		return value{}, err
	}
	return v, p.checkType(tok, &v)
}

func (p *parser) checkType(tok token, v *value) error {
	if v.k == kNull || v.k.fits(p.typ) {
		return nil
	}
	return p.lex.fail(tok.off, "%s literal does not match the column type %s", describeKind(v), p.typ)
}

// parseNamedLiteral handles true, false, null, date(..), date and time(..),
// duration(..); anything else is an unknown name (FEEL names are not supported).
func (p *parser) parseNamedLiteral() (value, error) {
	tok := p.lex.tok
	if err := p.advance(); err != nil {
		return value{}, err
	}
	switch tok.text {
	case "true", "false":
		return value{k: kBool, b: tok.text == "true"}, nil
	case "null":
		return value{}, nil
	case "date":
		if p.lex.tok.kind == tokIdent && p.lex.tok.text == "and" {
			if err := p.advance(); err != nil {
				return value{}, err
			}
			if p.lex.tok.kind != tokIdent || p.lex.tok.text != "time" {
				return value{}, p.unexpected("'time' in 'date and time'")
			}
			if err := p.advance(); err != nil {
				return value{}, err
			}
			return p.callArg(tok, parseDateTime)
		}
		return p.callArg(tok, parseDate)
	case "duration":
		return p.callArg(tok, parseDuration)
	}
	hint := ""
	if p.typ == typeString || p.typ == typeAny {
		hint = fmt.Sprintf(" (string literals need double quotes: %s)", strconv.Quote(clip(tok.text)))
	}
	return value{}, p.lex.fail(tok.off, "unknown name %q%s", clip(tok.text), hint)
}

// callArg reads ("string") and converts it.
func (p *parser) callArg(fn token, conv func(string) (value, error)) (value, error) {
	if err := p.expect(tokLParen, "'(' after "+fn.text); err != nil {
		return value{}, err
	}
	if p.lex.tok.kind != tokStr {
		return value{}, p.unexpected("a string argument")
	}
	arg := p.lex.tok
	v, err := conv(arg.text)
	if err != nil {
		return value{}, p.lex.fail(arg.off, "%v", err)
	}
	if err := p.advance(); err != nil {
		return value{}, err
	}
	if err := p.expect(tokRParen, "')'"); err != nil {
		return value{}, err
	}
	return v, nil
}

// temporalLiteral infers the type of an @"..." literal from its text.
func temporalLiteral(s string) (value, error) {
	switch {
	case strings.HasPrefix(s, "P") || strings.HasPrefix(s, "-P"):
		return parseDuration(s)
	case strings.Contains(s, "T"):
		return parseDateTime(s)
	case len(s) == 10:
		return parseDate(s)
	}
	return value{}, fmt.Errorf("unsupported @ literal %q (expected a date, date and time or duration)", clip(s))
}
