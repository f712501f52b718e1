package snodo

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// decodeBoth decodes raw with decodeCallTool and with json.Unmarshal, each
// from its own copy (the fast path may decode escapes in place), and
// requires the same result and the same verdict.
func decodeBoth(t testing.TB, raw []byte) (*CallToolResult, error) {
	t.Helper()
	var fast, slow CallToolResult
	errFast := decodeCallTool(bytes.Clone(raw), &fast, nil)
	errSlow := json.Unmarshal(raw, &slow)
	if (errFast == nil) != (errSlow == nil) {
		t.Fatalf("%.200s: fast path error %v, json.Unmarshal error %v", raw, errFast, errSlow)
	}
	if errSlow == nil && !equalResults(&fast, &slow) {
		t.Fatalf("%.200s:\nfast path %+v\njson.Unmarshal %+v", raw, fast, slow)
	}
	return &fast, errFast
}

func equalResults(a, b *CallToolResult) bool {
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	return bytes.Equal(ja, jb) && (a.Content == nil) == (b.Content == nil) &&
		(a.StructuredContent == nil) == (b.StructuredContent == nil) && (a.Meta == nil) == (b.Meta == nil)
}

// TestDecodeCallToolMatchesEncodingJSON: the fast path reads every result
// as json.Unmarshal does, errors included, whatever the shape.
func TestDecodeCallToolMatchesEncodingJSON(t *testing.T) {
	big := strings.Repeat("abcdefgh", aliasBytes/8+1)
	for _, raw := range []string{
		`{"content":[{"type":"text","text":"hello"}]}`,
		`{"resultType":"complete","content":[{"type":"text","text":"hello"}],"isError":true}`,
		`{"content":[{"type":"text","text":"a"},{"type":"image","data":"AAAA","mimeType":"image/png"}],"structuredContent":{"n":1}}`,
		`{"content":[{"type":"resource_link","uri":"file:///x","name":"x","title":"X","description":"d"}]}`,
		`{"content":[],"isError":false}`,
		`{"content":null,"isError":null,"structuredContent":null,"_meta":null}`,
		`{}`,
		`{"content":[{"type":"text","text":"esc \"q\" \\ \/ \b\f\n\r\t \u00e9 \ud83d\ude00 \ud800 \udc00x"}]}`,
		`{"content":[{"type":"text","text":"bad utf-8 ` + "\xff\xfe" + `"}]}`,
		`{"content":[{"type":"text","text":"x","annotations":{"priority":0.5}}]}`,
		`{"content":[{"type":"resource","resource":{"uri":"a","text":"b"}}]}`,
		`{"content":[{"type":"text","text":"x","_meta":{"k":1}}],"_meta":{"a":"b"}}`,
		`{"content":[{"type":"text","size":3}]}`,
		`{"Content":[{"type":"text","text":"case"}]}`,
		`{"content":[{"TYPE":"text","Text":"case"}]}`,
		`{"\u0063ontent":[{"type":"text","text":"escaped key"}]}`,
		`{"content":[{"type":"text","text":"first"}],"content":[{"type":"text","text":"second"}]}`,
		`{"content":[{"type":"text","text":"a","text":"b"}]}`,
		`{"content":[{"type":"text","text":1}]}`,
		`{"content":[{"type":"text","text":"x"},null]}`,
		`{"content":[1]}`,
		`{"content":{"type":"text"}}`,
		`{"isError":"yes","content":[]}`,
		`{"isError":1}`,
		`{"_meta":[1]}`,
		`{"content":[{"type":"custom","text":"x"}],"other":{"deep":[1,2,{"a":"b"}]}}`,
		`{"content":[{"type":"text","text":"` + big + `"}]}`,
		`{"content":[{"type":"text","text":"` + big + `\n\u00e9\ud83d\ude00\ud800\"` + big + `"}]}`,
		`{"content":[{"type":"text","text":"` + big + "\xff" + `"}]}`,
		`{"content":[{"type":"image","data":"` + big + `","mimeType":"image/png"}],"structuredContent":{"k":"` + big + `"}}`,
		`{"content":[{"type":"text","text":"` + big + `\ud800\u0041"}]}`,
		`{"content":[{"type":"text","text":"` + big + `"}],"annotations":1,"content":[]}`,
		`{"content":[{"type":"image","data":"","mimeType":"image/png"},{"type":"audio","data":null}]}`,
		`{"content":[{"type":"image","data":"AA=A","mimeType":"image/png"}]}`,
		`{"content":[{"type":"image","data":"!!!!"}]}`,
		`{"content":[{"type":"image","data":"AAA"}]}`,
		`{"content":[{"type":"image","data":"AA\u003d\u003d"}]}`,
		`{"content":[{"type":"image","data":"AA==\n"}]}`,
		`{"content":[{"type":"image","data":"AA==\t"}]}`,
		`{"content":[{"type":"image","data":"` + "\xff" + `"}]}`,
		`{"content":[{"type":"image","data":1}]}`,
	} {
		decodeBoth(t, []byte(raw))
	}
}

// TestDecodeCallToolBase64: a block's data arrives decoded, and data
// that is not standard base64 fails the call, saying so.
func TestDecodeCallToolBase64(t *testing.T) {
	res, err := decodeBoth(t, []byte(`{"content":[{"type":"image","data":"aGVsbG8=","mimeType":"image/png"}]}`))
	require.NoError(t, err)
	assert.Equal(t, []byte("hello"), res.Content[0].Data)

	for _, raw := range []string{
		`{"content":[{"type":"image","data":"aGVsbG8","mimeType":"image/png"}]}`,               // fast path
		`{"content":[{"type":"image","data":"aGVsbG8","annotations":{"priority":1}}]}`,         // json.Unmarshal
		`{"content":[{"type":"resource","resource":{"uri":"file:///x","blob":"not base64"}}]}`, // an embedded blob
	} {
		_, err := decodeBoth(t, []byte(raw))
		require.Error(t, err, raw)
		err = malformedResult("tools/call draw", err)
		assert.ErrorContains(t, err, "snodo: tools/call draw: malformed result: a base64 member (an image's or audio's data, a resource's blob) is not standard base64: illegal base64 data at input byte", raw)
	}
	var bad ReadResourceResult
	err = json.Unmarshal([]byte(`{"contents":[{"uri":"file:///x","blob":"=="}]}`), &bad)
	assert.ErrorContains(t, malformedResult("resources/read file:///x", err), "is not standard base64")
	assert.Equal(t, "snodo: prompts/get p: malformed result: boom", malformedResult("prompts/get p", errors.New("boom")).Error())
}

// TestDecodeCallToolSharesLargeStrings: a large text is the result's own
// bytes, not a copy; a small one is a copy.
func TestDecodeCallToolSharesLargeStrings(t *testing.T) {
	text := strings.Repeat("x", aliasBytes) + `\n`
	raw := []byte(`{"content":[{"type":"text","text":"` + text + `"}]}`)
	var res CallToolResult
	require.NoError(t, decodeCallTool(raw, &res, nil))
	require.Len(t, res.Content, 1)
	got := res.Content[0].Text
	assert.Equal(t, strings.Repeat("x", aliasBytes)+"\n", got)
	start := bytes.Index(raw, []byte("xxx"))
	assert.True(t, &raw[start] == unsafePointerOf(got), "the text shares the line's bytes")

	pad := strings.Repeat(" ", shareLineBytes)
	small := []byte(`{"content":[{"type":"text","text":"small"}]}` + pad)
	require.NoError(t, decodeCallTool(small, &res, nil))
	assert.True(t, &small[bytes.Index(small, []byte("small"))] != unsafePointerOf(res.Content[0].Text), "a small text in a large result is a copy")

	tiny := []byte(`{"content":[{"type":"text","text":"tiny"}],"_meta":{"k":1}}`)
	require.NoError(t, decodeCallTool(tiny, &res, nil))
	assert.True(t, &tiny[bytes.Index(tiny, []byte("tiny"))] == unsafePointerOf(res.Content[0].Text), "a text in a small result shares its bytes")
	assert.Equal(t, `{"k":1}`, string(res.Meta), "_meta is kept raw")
}

// TestMeta: a result's _meta is kept raw, as json.RawMessage keeps it,
// whichever decoder read it, and marshals back as it came.
func TestMeta(t *testing.T) {
	for _, raw := range []string{
		`{"content":[],"_meta":{"x":[1,2],"io.modelcontextprotocol/serverInfo":{"name":"s","version":"1"}}}`,
		`{"content":[],"_meta":{"x":[1,2]},"annotations":{}}`,
		`{"content":[{"type":"text","text":"x","_meta":{"k":1}}],"_meta":{"x":[1,2]}}`, // json.Unmarshal
	} {
		res, err := decodeBoth(t, []byte(raw))
		require.NoError(t, err)
		var m map[string]json.RawMessage
		require.NoError(t, json.Unmarshal(res.Meta, &m), raw)
		assert.Equal(t, `[1,2]`, string(m["x"]))
	}
	res, err := decodeBoth(t, []byte(`{"_meta":null}`))
	require.NoError(t, err)
	assert.Equal(t, "null", string(res.Meta), "null kept, as json.RawMessage keeps it")
	out, err := json.Marshal(CallToolResult{Meta: json.RawMessage(`{"y":true}`)})
	require.NoError(t, err)
	assert.Contains(t, string(out), `"_meta":{"y":true}`)
	out, err = json.Marshal(CallToolResult{})
	require.NoError(t, err)
	assert.NotContains(t, string(out), "_meta", "an empty Meta is left out")
}

// TestCallToolAllocations: a typed call with pre-encoded arguments and a
// small text result stays within its allocation budget, the result
// shaped as spec-following servers send it (in the modern era, the
// server's identity in every result's _meta).
func TestCallToolAllocations(t *testing.T) {
	forEachEra(t, func(t *testing.T, c *Client) {
		if c.ProtocolVersion() == modernVersions[0] {
			res, err := c.CallTool(t.Context(), "echo", map[string]any{"message": "hi"})
			require.NoError(t, err)
			var m map[string]json.RawMessage
			require.NoError(t, json.Unmarshal(res.Meta, &m))
			require.NotNil(t, m[metaServerInfo], "the test server's modern results carry _meta.serverInfo")
		}
		var args any = json.RawMessage(`{"message":"hi"}`)
		ctx := t.Context()
		call := func() {
			res, err := c.CallTool(ctx, "echo", args)
			if err != nil || len(res.Content) != 1 {
				t.Fatalf("%+v, %v", res, err)
			}
		}
		call()
		allocs := testing.AllocsPerRun(200, call)
		t.Logf("%.1f allocations per CallTool", allocs)
		assert.LessOrEqual(t, allocs, 4.0, "CallTool with pre-encoded args and a small text result")
	})
}

func FuzzDecodeCallTool(f *testing.F) {
	for _, s := range []string{
		`{"content":[{"type":"text","text":"hello"}],"isError":false}`,
		`{"content":[{"type":"text","text":"\ud83d\ude00\n"}],"structuredContent":{"a":[1]}}`,
		`{"content":[{"type":"image","data":"AA==","mimeType":"image/png","annotations":{}}]}`,
		`{"Content":null,"_meta":{"x":1}}`,
	} {
		f.Add([]byte(s), false)
	}
	pad := strings.Repeat("p", aliasBytes)
	f.Fuzz(func(t *testing.T, raw []byte, large bool) {
		if !json.Valid(raw) {
			return // the reader's scan lets only valid JSON through
		}
		if large { // take the in-place path: pad every text that begins a string
			raw = bytes.ReplaceAll(raw, []byte(`"text":"`), []byte(`"text":"`+pad))
		}
		decodeBoth(t, raw)
	})
}

// unsafePointerOf is where a string's bytes are.
func unsafePointerOf(s string) *byte { return unsafe.StringData(s) }

// TestCallToolArgumentsAreChecked: pre-encoded arguments that are not
// JSON are refused before anything is sent; arguments over several lines
// reach the server on one.
func TestCallToolArgumentsAreChecked(t *testing.T) {
	c := dialTest(t, []string{"-era", "modern"})
	_, err := c.CallTool(t.Context(), "echo", json.RawMessage(`{"message":`))
	require.Error(t, err)
	assert.ErrorIs(t, err, ErrInvalidParams)
	res, err := c.CallTool(t.Context(), "echo", json.RawMessage("{\n\"message\":\n\"two lines\"\n}"))
	require.NoError(t, err)
	assert.Contains(t, res.Text(), "two lines")
}

// TestRequestAllocations: the raw Request, params encoded beforehand and
// the result left raw, allocates at most twice per call (the params in an
// interface, the result's copy).
func TestRequestAllocations(t *testing.T) {
	forEachEra(t, func(t *testing.T, c *Client) {
		params := json.RawMessage(`{"name":"echo","arguments":{"message":"hi"}}`)
		ctx := t.Context()
		call := func() {
			if _, err := c.Request(ctx, "tools/call", params); err != nil {
				t.Fatal(err)
			}
		}
		for range 100 { // warm the pools
			call()
		}
		allocs := testing.AllocsPerRun(500, call)
		t.Logf("%.2f allocations per Request", allocs)
		assert.LessOrEqual(t, allocs, 2.0)
	})
}

// TestStructuredContentAppendKeepsTheText: appending to StructuredContent
// cannot write into a long text that shares the result's bytes.
func TestStructuredContentAppendKeepsTheText(t *testing.T) {
	text := strings.Repeat("t", aliasBytes)
	raw := []byte(`{"structuredContent":{"a":1},"content":[{"type":"text","text":"` + text + `"}]}`)
	var res CallToolResult
	require.NoError(t, decodeCallTool(raw, &res, nil))
	_ = append(res.StructuredContent, strings.Repeat("x", 64)...)
	assert.Equal(t, text, res.Content[0].Text)
}
