package testserver

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"strings"
	"time"
)

// The "ask" tool: multi round-trip requests (modern) or a real
// elicitation/create request to the client (legacy).

// askKey is the inputRequests key used by the ask tool.
const askKey = "name"

// askState is the content of the ask tool's requestState.
type askState struct {
	Round  int      `json:"round"`
	Rounds int      `json:"rounds"`
	Names  []string `json:"names"`
}

var stateKey = []byte("snodo-testserver request state")

func stateMAC(payload []byte) string {
	m := hmac.New(sha256.New, stateKey)
	m.Write(payload)
	return hex.EncodeToString(m.Sum(nil))[:16]
}

func encodeState(st askState) string {
	payload := encode(st)
	return base64.RawURLEncoding.EncodeToString(payload) + "." + stateMAC(payload)
}

func decodeState(s string) (askState, bool) {
	var st askState
	b64, mac, ok := strings.Cut(s, ".")
	if !ok {
		return st, false
	}
	payload, err := base64.RawURLEncoding.DecodeString(b64)
	if err != nil || !hmac.Equal([]byte(mac), []byte(stateMAC(payload))) {
		return st, false
	}
	if json.Unmarshal(payload, &st) != nil || st.Round < 1 || st.Rounds < st.Round {
		return st, false
	}
	return st, true
}

// elicitParams are the params of the ask tool's elicitation request.
func elicitParams(modern bool, round int) obj {
	p := obj{
		"message": "What is your name? (round " + itoa(round) + ")",
		"requestedSchema": obj{
			"type":       "object",
			"properties": obj{"name": obj{"type": "string"}},
			"required":   []string{"name"},
		},
	}
	if modern {
		p["mode"] = "form"
	}
	return p
}

// elicitAnswer extracts the name from an ElicitResult.
func elicitAnswer(raw json.RawMessage) (name, action string, ok bool) {
	var r struct {
		Action  string `json:"action"`
		Content struct {
			Name *string `json:"name"`
		} `json:"content"`
	}
	if json.Unmarshal(raw, &r) != nil {
		return "", "", false
	}
	if r.Action != "accept" {
		return "", r.Action, true
	}
	if r.Content.Name == nil {
		return "", "", false
	}
	return *r.Content.Name, r.Action, true
}

func askRounds(args json.RawMessage) int {
	var a struct {
		Rounds int `json:"rounds"`
	}
	_ = json.Unmarshal(args, &a)
	return max(1, a.Rounds)
}

func (s *server) ask(req *request, p *callParams) (any, *rpcError) {
	if !req.modern {
		return s.askLegacy(req, askRounds(p.Arguments))
	}
	var st askState
	switch {
	case p.RequestState == nil && p.InputResponses == nil:
		return inputRequired(askState{Round: 1, Rounds: askRounds(p.Arguments)}), nil
	case p.RequestState == nil:
		return nil, errInvalidParams("missing requestState")
	default:
		var ok bool
		if st, ok = decodeState(*p.RequestState); !ok {
			return nil, errInvalidParams("invalid requestState")
		}
	}
	raw, present := p.InputResponses[askKey]
	if !present {
		return inputRequired(st), nil // ask again for the missing answer
	}
	name, action, ok := elicitAnswer(raw)
	if !ok {
		return nil, errInvalidParams("invalid inputResponses." + askKey)
	}
	if action != "accept" {
		return textResult("no name given: "+action, true), nil
	}
	st.Names = append(st.Names, name)
	if st.Round < st.Rounds {
		st.Round++
		return inputRequired(st), nil
	}
	return textResult("Hello, "+name+"!", false), nil
}

func inputRequired(st askState) obj {
	return obj{
		"resultType": "input_required",
		"inputRequests": obj{askKey: obj{
			"method": "elicitation/create",
			"params": elicitParams(true, st.Round),
		}},
		"requestState": encodeState(st),
	}
}

// askLegacy sends elicitation/create requests to the client.
func (s *server) askLegacy(req *request, rounds int) (any, *rpcError) {
	var name string
	for round := 1; round <= rounds; round++ {
		line := s.call(req, "elicitation/create", elicitParams(false, round), 30*time.Second)
		if line == nil {
			if req.ctx.Err() != nil {
				return noAnswer, nil
			}
			return textResult("elicitation timed out", true), nil
		}
		var resp struct {
			Result json.RawMessage `json:"result"`
			Error  *rpcError       `json:"error"`
		}
		_ = json.Unmarshal(line, &resp)
		if resp.Error != nil {
			return textResult("elicitation failed: "+resp.Error.Message, true), nil
		}
		n, action, ok := elicitAnswer(resp.Result)
		if !ok {
			return textResult("invalid elicitation result", true), nil
		}
		if action != "accept" {
			return textResult("no name given: "+action, true), nil
		}
		name = n
	}
	return textResult("Hello, "+name+"!", false), nil
}

func itoa(i int) string { return string(encode(i)) }
