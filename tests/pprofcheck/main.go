// pprofcheck parses a pprof file with github.com/google/pprof/profile
// (which validates it) and prints it as JSON for the integration tests:
//
//	{"sample_type": [[type, unit], ...], "period_type": [type, unit],
//	 "period": N, "duration_nanos": N, "time_nanos": N,
//	 "mappings": [{"file", "build_id", "start", "limit", "offset",
//	               "has": [functions, filenames, line_numbers, inline_frames]}],
//	 "samples": [{"values": [...],
//	              "frames": [{"function", "file", "line", "address", "mapping"}],
//	              "labels": {key: [str...]}, "num_labels": {key: [num...]},
//	              "num_units": {key: [unit...]}}]}
//
// Frames are leaf first; each Location's Lines are expanded in order,
// innermost inlined function first, as `go tool pprof -traces` shows them.
// Exits 1 with the parser's error on invalid input.
//
// With -splunk, FILE is a Splunk AlwaysOn Profiling payload (gzip'd or raw
// pprof): it must have no sample_type and no values, as every Splunk SDK
// sends it.  It is decoded with the same google/pprof parser (which also
// insists on string_table[0] == ""), and validated with CheckValid as if
// each sample had one count.
package main

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/google/pprof/profile"
)

type frame struct {
	Function   string `json:"function"`
	SystemName string `json:"system_name"`
	File       string `json:"file"`
	Line       int64  `json:"line"`
	Address    uint64 `json:"address"`
	Mapping    string `json:"mapping"` // the Location's mapping's file, "" for none
}

type mapping struct {
	File    string `json:"file"`
	BuildID string `json:"build_id"`
	Start   uint64 `json:"start"`
	Limit   uint64 `json:"limit"`
	Offset  uint64 `json:"offset"`
	// has_functions, has_filenames, has_line_numbers, has_inline_frames
	Has [4]bool `json:"has"`
}

type sample struct {
	Values    []int64             `json:"values"`
	Locations int                 `json:"locations"`
	Frames    []frame             `json:"frames"`
	Labels    map[string][]string `json:"labels"`
	NumLabels map[string][]int64  `json:"num_labels"`
	NumUnits  map[string][]string `json:"num_units"`
}

type output struct {
	SampleType    [][2]string `json:"sample_type"`
	DefaultType   string      `json:"default_sample_type"`
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
		DefaultType:   p.DefaultSampleType,
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
		out.Mappings = append(out.Mappings, mapping{m.File, m.BuildID, m.Start, m.Limit, m.Offset,
			[4]bool{m.HasFunctions, m.HasFilenames, m.HasLineNumbers, m.HasInlineFrames}})
	}
	for _, s := range p.Sample {
		o := sample{
			Values:    s.Value,
			Locations: len(s.Location),
			Frames:    []frame{},
			Labels:    map[string][]string{},
			NumLabels: map[string][]int64{},
			NumUnits:  map[string][]string{},
		}
		for _, loc := range s.Location {
			file := ""
			if loc.Mapping != nil {
				file = loc.Mapping.File
			}
			if len(loc.Line) == 0 {
				o.Frames = append(o.Frames, frame{Address: loc.Address, Mapping: file})
			}
			for _, line := range loc.Line {
				f := frame{Line: line.Line, Address: loc.Address, Mapping: file}
				if line.Function != nil {
					f.Function = line.Function.Name
					f.SystemName = line.Function.SystemName
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
		for k, v := range s.NumUnit {
			o.NumUnits[k] = v
		}
		out.Samples = append(out.Samples, o)
	}
	return out
}

// parseSplunk decodes a Splunk-style profile: no sample types, no values.
func parseSplunk(data []byte) (*profile.Profile, error) {
	if len(data) >= 2 && data[0] == 0x1f && data[1] == 0x8b {
		gz, err := gzip.NewReader(bytes.NewBuffer(data))
		if err != nil {
			return nil, err
		}
		if data, err = io.ReadAll(gz); err != nil {
			return nil, err
		}
	}
	p, err := profile.ParseUncompressed(data)
	if err != nil {
		return nil, err
	}
	if len(p.SampleType) != 0 {
		return nil, fmt.Errorf("a Splunk CPU profile has no sample_type, got %d", len(p.SampleType))
	}
	for _, s := range p.Sample {
		if len(s.Value) != 0 {
			return nil, fmt.Errorf("a Splunk CPU profile has no values, got %v", s.Value)
		}
	}
	// CheckValid wants one value per sample type: validate with a count.
	p.SampleType = []*profile.ValueType{{Type: "samples", Unit: "count"}}
	for _, s := range p.Sample {
		s.Value = []int64{1}
	}
	if err := p.CheckValid(); err != nil {
		return nil, err
	}
	p.SampleType = nil
	for _, s := range p.Sample {
		s.Value = nil
	}
	return p, nil
}

func main() {
	splunk := flag.Bool("splunk", false, "FILE is a Splunk profiling payload (no sample_type, no values)")
	flag.Parse()
	if flag.NArg() != 1 {
		fmt.Fprintln(os.Stderr, "usage: pprofcheck [-splunk] FILE")
		os.Exit(2)
	}
	data, err := os.ReadFile(flag.Arg(0))
	if err != nil {
		fmt.Fprintln(os.Stderr, "pprofcheck:", err)
		os.Exit(1)
	}
	if *splunk {
		p, err := parseSplunk(data)
		if err != nil {
			fmt.Fprintln(os.Stderr, "pprofcheck: invalid Splunk profile:", err)
			os.Exit(1)
		}
		if err := json.NewEncoder(os.Stdout).Encode(convert(p)); err != nil {
			fmt.Fprintln(os.Stderr, "pprofcheck:", err)
			os.Exit(1)
		}
		return
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
