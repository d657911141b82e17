package scenario

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	"blis/internal/inputerr"
)

// The value types below satisfy github.com/spf13/pflag's Value interface
// (String, Set, Type) without importing it, so one table of settings serves
// both the command line and scenario files.

// quote writes a value a user gave into a message (inputerr.Quote).
func quote(s string) string { return inputerr.Quote(s) }

// parseInt reads a base-10 integer of the given bit size, saying "out of
// range" with the bound rather than "not an integer" when it is one.
func parseInt(s string, bitSize int) (int64, error) {
	n, err := strconv.ParseInt(strings.TrimSpace(s), 10, bitSize)
	if err == nil {
		return n, nil
	}
	if errors.Is(err, strconv.ErrRange) {
		if strings.HasPrefix(strings.TrimSpace(s), "-") {
			return 0, fmt.Errorf("%s is out of range: at least %d", quote(s), int64(-1)<<(bitSize-1))
		}
		return 0, fmt.Errorf("%s is out of range: at most %d", quote(s), int64(1<<(bitSize-1)-1))
	}
	return 0, fmt.Errorf("%s is not an integer", quote(s))
}

type intValue struct{ p *int }

func (v intValue) String() string { return strconv.Itoa(*v.p) }
func (v intValue) Type() string   { return "int" }
func (v intValue) Set(s string) error {
	n, err := parseInt(s, strconv.IntSize)
	if err != nil {
		return err
	}
	*v.p = int(n)
	return nil
}

type int64Value struct{ p *int64 }

func (v int64Value) String() string { return strconv.FormatInt(*v.p, 10) }
func (v int64Value) Type() string   { return "int" }
func (v int64Value) Set(s string) error {
	n, err := parseInt(s, 64)
	if err != nil {
		return err
	}
	*v.p = n
	return nil
}

type floatValue struct{ p *float64 }

func (v floatValue) String() string { return strconv.FormatFloat(*v.p, 'g', -1, 64) }
func (v floatValue) Type() string   { return "float" }
func (v floatValue) Set(s string) error {
	f, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
		return fmt.Errorf("%s is not a finite number", quote(s))
	}
	*v.p = f
	return nil
}

// rateValue is vllm bench's --request-rate: "inf" or a number.
type rateValue struct{ p *float64 }

func (v rateValue) String() string {
	if math.IsInf(*v.p, 1) {
		return "inf"
	}
	return strconv.FormatFloat(*v.p, 'g', -1, 64)
}
func (v rateValue) Type() string { return "rate" }
func (v rateValue) Set(s string) error {
	t := strings.ToLower(strings.TrimSpace(s))
	if t == "inf" || t == "+inf" || t == "infinity" {
		*v.p = math.Inf(1)
		return nil
	}
	f, err := strconv.ParseFloat(t, 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
		return fmt.Errorf("%s is not a rate: use a number of requests per second or inf", quote(s))
	}
	*v.p = f
	return nil
}

type stringValue struct{ p *string }

func (v stringValue) String() string     { return *v.p }
func (v stringValue) Type() string       { return "string" }
func (v stringValue) Set(s string) error { *v.p = strings.TrimSpace(s); return nil }

// boolValue is a vLLM BooleanOptionalAction flag; neg marks the
// --no-<name> spelling, which stores the opposite.
type boolValue struct {
	p   *bool
	neg bool
}

func (v boolValue) String() string {
	if v.neg {
		return strconv.FormatBool(!*v.p)
	}
	return strconv.FormatBool(*v.p)
}
func (v boolValue) Type() string     { return "bool" }
func (v boolValue) IsBoolFlag() bool { return true }
func (v boolValue) Set(s string) error {
	b, err := strconv.ParseBool(strings.TrimSpace(s))
	if err != nil {
		return fmt.Errorf("%s is not a boolean (true or false)", quote(s))
	}
	*v.p = b != v.neg
	return nil
}

// floatListValue is a comma-separated list such as --metric-percentiles 50,90,99.
type floatListValue struct{ p *[]float64 }

func (v floatListValue) String() string {
	parts := make([]string, len(*v.p))
	for i, f := range *v.p {
		parts[i] = strconv.FormatFloat(f, 'g', -1, 64)
	}
	return strings.Join(parts, ",")
}
func (v floatListValue) Type() string { return "list" }
func (v floatListValue) Set(s string) error {
	var out []float64
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		f, err := strconv.ParseFloat(part, 64)
		if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
			return fmt.Errorf("%s is not a number", quote(part))
		}
		out = append(out, f)
	}
	if len(out) == 0 {
		return fmt.Errorf("%s: give at least one number", quote(s))
	}
	*v.p = out
	return nil
}
