package handlers_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/snodo/snodo/handlers"
)

const form = `{"message":"Your details","requestedSchema":{"type":"object","required":["name","age"],"properties":{
	"name":{"type":"string","minLength":2,"maxLength":5},
	"age":{"type":"integer","minimum":0,"maximum":150},
	"score":{"type":"number","maximum":1},
	"ok":{"type":"boolean"},
	"email":{"type":"string","format":"email"},
	"site":{"type":"string","format":"uri"},
	"born":{"type":"string","format":"date"},
	"seen":{"type":"string","format":"date-time"},
	"color":{"type":"string","enum":["red","green"]},
	"size":{"type":"string","oneOf":[{"const":"s","title":"Small"},{"const":"l","title":"Large"}]},
	"tags":{"type":"array","minItems":1,"maxItems":2,"items":{"type":"string","enum":["a","b","c"]}},
	"pets":{"type":"array","items":{"anyOf":[{"const":"cat","title":"Cat"},{"const":"dog","title":"Dog"}]}}}}}`

func TestElicitCheck(t *testing.T) {
	p, err := (&handlers.Request{Method: "elicitation/create", Params: json.RawMessage(form)}).Elicitation()
	require.NoError(t, err)
	ok := `"name":"Ada","age":36`
	for content, want := range map[string]string{
		`{` + ok + `}`: "",
		`{` + ok + `,"score":0.5,"ok":true,"email":"ada@example.com","site":"https://example.com","born":"1815-12-10","seen":"2026-01-02T03:04:05Z","color":"red","size":"l","tags":["a","c"],"pets":["dog"]}`: "",
		`{"name":"Ada"}`:                      "the required field \"age\" is missing",
		`{"name":"Ada","age":null}`:           "the required field \"age\" is missing",
		`{` + ok + `,"extra":1,"more":["x"]}`: "",
		`{` + ok + `,"extra":{"a":1}}`:        `the field "extra" (not in the requested schema) must be a string`,
		`{"name":7,"age":1}`:                  `the field "name": want a string, got 7`,
		`{"name":"A","age":1}`:                `the field "name": 1 characters, at least 2 needed`,
		`{"name":"Adaline","age":1}`:          `at most 5 allowed`,
		`{"name":"Ada","age":1.5}`:            `the field "age": want an integer, got 1.5`,
		`{"name":"Ada","age":"1"}`:            `want an integer, got "1"`,
		`{"name":"Ada","age":200}`:            `above the maximum 150`,
		`{"name":"Ada","age":-1}`:             `below the minimum 0`,
		`{` + ok + `,"ok":"yes"}`:             `want a boolean`,
		`{` + ok + `,"email":"ada"}`:          `"ada" is not a valid email`,
		`{` + ok + `,"site":"nowhere"}`:       `is not a valid uri`,
		`{` + ok + `,"born":"10/12"}`:         `is not a valid date`,
		`{` + ok + `,"seen":"today"}`:         `is not a valid date-time`,
		`{` + ok + `,"color":"blue"}`:         `"blue" is not one of red, green`,
		`{` + ok + `,"size":"m"}`:             `"m" is not one of s, l`,
		`{` + ok + `,"tags":[]}`:              `0 choices, at least 1 needed`,
		`{` + ok + `,"tags":["a","b","c"]}`:   `at most 2 allowed`,
		`{` + ok + `,"tags":["z"]}`:           `"z" is not one of a, b, c`,
		`{` + ok + `,"pets":["cow"]}`:         `"cow" is not one of cat, dog`,
		`{` + ok + `,"tags":"a"}`:             `want an array of strings`,
		`{` + ok + `,"score":null}`:           `the field "score": want a number, got null`,
		`{` + ok + `,"pets":null}`:            `the field "pets": want an array of strings, got null`,
		`{` + ok + `,"color":null}`:           `the field "color": want a string, got null`,
	} {
		var m map[string]any
		require.NoError(t, json.Unmarshal([]byte(content), &m))
		err := p.Check(m)
		if want == "" {
			assert.NoError(t, err, content)
		} else {
			assert.ErrorContains(t, err, want, content)
		}
	}
	assert.ErrorContains(t, p.Check(nil), `"name" is missing`, "an accepted form without content")
}
