package handlers

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/mail"
	"net/url"
	"slices"
	"sort"
	"strings"
	"time"
	"unicode/utf8"
)

// Check reports whether content answers the form RequestedSchema asks
// for: every required field present, each value of a field the schema
// names of that field's type — a string (within minLength/maxLength, of
// its format, one of its enum values), a number or an integer (within
// minimum/maximum), a boolean, or an array of enum values (within
// minItems/maxItems), never null — and any other field a string, a
// number, a boolean or an array of strings. content is what an ElicitResult carries. The
// error names the first field that fails, fields in name order.
func (p *ElicitParams) Check(content map[string]any) error {
	raw, err := json.Marshal(content)
	if err != nil {
		return fmt.Errorf("the answer cannot be marshalled: %w", err)
	}
	return p.checkRaw(raw)
}

func (p *ElicitParams) checkRaw(content json.RawMessage) error {
	s := p.RequestedSchema
	if s == nil {
		return nil // URL mode, or nothing to check against
	}
	var fields map[string]json.RawMessage
	if len(content) > 0 && !bytes.Equal(content, []byte("null")) {
		if err := json.Unmarshal(content, &fields); err != nil {
			return errors.New("the content must be a JSON object")
		}
	}
	for _, name := range s.Required {
		if v, ok := fields[name]; !ok || bytes.Equal(v, []byte("null")) {
			return fmt.Errorf("the required field %q is missing", name)
		}
	}
	names := make([]string, 0, len(fields))
	for name := range fields {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		prop, ok := s.Properties[name]
		if !ok {
			// JSON Schema allows fields the schema does not name; MCP
			// still wants primitive values.
			if !primitive(fields[name]) {
				return fmt.Errorf("the field %q (not in the requested schema) must be a string, a number, a boolean or an array of strings, got %s", name, fields[name])
			}
			continue
		}
		if err := prop.check(fields[name]); err != nil {
			return fmt.Errorf("the field %q: %w", name, err)
		}
	}
	return nil
}

func (p *PropertySchema) check(v json.RawMessage) error {
	if bytes.Equal(v, []byte("null")) {
		// encoding/json takes null as any type's zero value; the schema
		// does not.
		switch p.Type {
		case "string", "number", "integer", "boolean", "array":
			return fmt.Errorf("want %s, got null", p.want())
		}
	}
	switch p.Type {
	case "string":
		var s string
		if json.Unmarshal(v, &s) != nil {
			return fmt.Errorf("want %s, got %s", p.want(), v)
		}
		return p.checkString(s)
	case "number", "integer":
		var f float64
		if v[0] == '"' || json.Unmarshal(v, &f) != nil {
			return fmt.Errorf("want %s, got %s", p.want(), v)
		}
		if p.Type == "integer" && f != math.Trunc(f) {
			return fmt.Errorf("want an integer, got %s", v)
		}
		if p.Minimum != nil && f < *p.Minimum {
			return fmt.Errorf("%s is below the minimum %v", v, *p.Minimum)
		}
		if p.Maximum != nil && f > *p.Maximum {
			return fmt.Errorf("%s is above the maximum %v", v, *p.Maximum)
		}
	case "boolean":
		if !bytes.Equal(v, []byte("true")) && !bytes.Equal(v, []byte("false")) {
			return fmt.Errorf("want %s, got %s", p.want(), v)
		}
	case "array":
		var items []string
		if json.Unmarshal(v, &items) != nil {
			return fmt.Errorf("want %s, got %s", p.want(), v)
		}
		if p.MinItems != nil && len(items) < *p.MinItems {
			return fmt.Errorf("%d choices, at least %d needed", len(items), *p.MinItems)
		}
		if p.MaxItems != nil && len(items) > *p.MaxItems {
			return fmt.Errorf("%d choices, at most %d allowed", len(items), *p.MaxItems)
		}
		if opts := p.Options(); opts != nil {
			for _, it := range items {
				if !slices.Contains(opts, it) {
					return fmt.Errorf("%q is not one of %s", it, strings.Join(opts, ", "))
				}
			}
		}
	}
	return nil // a type the restricted schema does not have: nothing to check
}

func (p *PropertySchema) checkString(s string) error {
	n := utf8.RuneCountInString(s)
	if p.MinLength != nil && n < *p.MinLength {
		return fmt.Errorf("%d characters, at least %d needed", n, *p.MinLength)
	}
	if p.MaxLength != nil && n > *p.MaxLength {
		return fmt.Errorf("%d characters, at most %d allowed", n, *p.MaxLength)
	}
	if opts := p.Options(); opts != nil && !slices.Contains(opts, s) {
		return fmt.Errorf("%q is not one of %s", s, strings.Join(opts, ", "))
	}
	var bad bool
	switch p.Format {
	case "email":
		a, err := mail.ParseAddress(s)
		bad = err != nil || a.Address != s
	case "uri":
		u, err := url.Parse(s)
		bad = err != nil || u.Scheme == ""
	case "date":
		_, err := time.Parse(time.DateOnly, s)
		bad = err != nil
	case "date-time":
		_, err := time.Parse(time.RFC3339, s)
		bad = err != nil
	}
	if bad {
		return fmt.Errorf("%q is not a valid %s", s, p.Format)
	}
	return nil
}

// want names the values a field of p's type takes, for errors.
func (p *PropertySchema) want() string {
	switch p.Type {
	case "integer":
		return "an integer"
	case "array":
		return "an array of strings"
	}
	return "a " + p.Type
}

// primitive: the values an elicitation answer may hold.
func primitive(v json.RawMessage) bool {
	switch v[0] {
	case '"', 't', 'f', '-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
		return true
	case '[':
		var items []string
		return json.Unmarshal(v, &items) == nil
	}
	return false
}
