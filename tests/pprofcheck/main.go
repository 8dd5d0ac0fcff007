// pprofcheck parses a pprof file with github.com/google/pprof/profile
// (which validates it) and prints it as JSON for the integration tests:
//
//	{"sample_type": [[type, unit], ...], "period_type": [type, unit],
//	 "period": N, "duration_nanos": N, "time_nanos": N,
//	 "mappings": [{"file", "build_id", "start", "limit", "offset"}],
//	 "samples": [{"values": [...],
//	              "frames": [{"function", "file", "line", "address"}],
//	              "labels": {key: [str...]}, "num_labels": {key: [num...]}}]}
//
// Frames are leaf first; each Location's Lines are expanded in order,
// innermost inlined function first, as `go tool pprof -traces` shows them.
// Exits 1 with the parser's error on invalid input.
package main

import (
	"encoding/json"
	"fmt"
	"os"

	"github.com/google/pprof/profile"
)

type frame struct {
	Function string `json:"function"`
	File     string `json:"file"`
	Line     int64  `json:"line"`
	Address  uint64 `json:"address"`
}

type mapping struct {
	File    string `json:"file"`
	BuildID string `json:"build_id"`
	Start   uint64 `json:"start"`
	Limit   uint64 `json:"limit"`
	Offset  uint64 `json:"offset"`
}

type sample struct {
	Values    []int64             `json:"values"`
	Frames    []frame             `json:"frames"`
	Labels    map[string][]string `json:"labels"`
	NumLabels map[string][]int64  `json:"num_labels"`
}

type output struct {
	SampleType    [][2]string `json:"sample_type"`
	PeriodType    [2]string   `json:"period_type"`
	Period        int64       `json:"period"`
	DurationNanos int64       `json:"duration_nanos"`
	TimeNanos     int64       `json:"time_nanos"`
	Mappings      []mapping   `json:"mappings"`
	Samples       []sample    `json:"samples"`
}

func convert(p *profile.Profile) output {
	out := output{
		SampleType:    [][2]string{},
		Period:        p.Period,
		DurationNanos: p.DurationNanos,
		TimeNanos:     p.TimeNanos,
		Mappings:      []mapping{},
		Samples:       []sample{},
	}
	for _, st := range p.SampleType {
		out.SampleType = append(out.SampleType, [2]string{st.Type, st.Unit})
	}
	if p.PeriodType != nil {
		out.PeriodType = [2]string{p.PeriodType.Type, p.PeriodType.Unit}
	}
	for _, m := range p.Mapping {
		out.Mappings = append(out.Mappings, mapping{m.File, m.BuildID, m.Start, m.Limit, m.Offset})
	}
	for _, s := range p.Sample {
		o := sample{
			Values:    s.Value,
			Frames:    []frame{},
			Labels:    map[string][]string{},
			NumLabels: map[string][]int64{},
		}
		for _, loc := range s.Location {
			if len(loc.Line) == 0 {
				o.Frames = append(o.Frames, frame{Address: loc.Address})
			}
			for _, line := range loc.Line {
				f := frame{Line: line.Line, Address: loc.Address}
				if line.Function != nil {
					f.Function = line.Function.Name
					f.File = line.Function.Filename
				}
				o.Frames = append(o.Frames, f)
			}
		}
		for k, v := range s.Label {
			o.Labels[k] = v
		}
		for k, v := range s.NumLabel {
			o.NumLabels[k] = v
		}
		out.Samples = append(out.Samples, o)
	}
	return out
}

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: pprofcheck FILE")
		os.Exit(2)
	}
	data, err := os.ReadFile(os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, "pprofcheck:", err)
		os.Exit(1)
	}
	p, err := profile.ParseData(data)
	if err != nil {
		fmt.Fprintln(os.Stderr, "pprofcheck: invalid profile:", err)
		os.Exit(1)
	}
	if err := p.CheckValid(); err != nil {
		fmt.Fprintln(os.Stderr, "pprofcheck: invalid profile:", err)
		os.Exit(1)
	}
	enc := json.NewEncoder(os.Stdout)
	if err := enc.Encode(convert(p)); err != nil {
		fmt.Fprintln(os.Stderr, "pprofcheck:", err)
		os.Exit(1)
	}
}
