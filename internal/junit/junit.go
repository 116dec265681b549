// Package junit writes JUnit XML reports, the format CI systems read test
// results in.
package junit

import (
	"encoding/xml"
	"io"
)

// Suites is a JUnit report.
type Suites struct {
	XMLName  xml.Name `xml:"testsuites"`
	Name     string   `xml:"name,attr"`
	Tests    int      `xml:"tests,attr"`
	Failures int      `xml:"failures,attr"`
	Errors   int      `xml:"errors,attr"`
	Suites   []Suite  `xml:"testsuite"`
}

// Suite is one test suite of a report.
type Suite struct {
	Name     string `xml:"name,attr"`
	Tests    int    `xml:"tests,attr"`
	Failures int    `xml:"failures,attr"`
	Errors   int    `xml:"errors,attr"`
	Cases    []Case `xml:"testcase"`
}

// Case is one test case.
type Case struct {
	Name      string   `xml:"name,attr"`
	Classname string   `xml:"classname,attr"`
	Failure   *Failure `xml:"failure,omitempty"`
	Error     *Failure `xml:"error,omitempty"`
	SystemOut string   `xml:"system-out,omitempty"`
}

// Failure is a failed or erroneous case.
type Failure struct {
	Message string `xml:"message,attr"`
	Type    string `xml:"type,attr"`
	Text    string `xml:",chardata"`
}

// Add appends c to s, counting it.
func (s *Suite) Add(c Case) {
	s.Cases = append(s.Cases, c)
	s.Tests++
	if c.Failure != nil {
		s.Failures++
	}
	if c.Error != nil {
		s.Errors++
	}
}

// Write writes a report named name of suites, with the totals.
func Write(w io.Writer, name string, suites ...Suite) error {
	doc := Suites{Name: name, Suites: suites}
	for _, s := range suites {
		doc.Tests += s.Tests
		doc.Failures += s.Failures
		doc.Errors += s.Errors
	}
	if _, err := io.WriteString(w, xml.Header); err != nil {
		return err
	}
	enc := xml.NewEncoder(w)
	enc.Indent("", "  ")
	if err := enc.Encode(doc); err != nil {
		return err
	}
	_, err := io.WriteString(w, "\n")
	return err
}
