// Package reports renders the results of a simctl run (package results):
// junit.xml for CI, report.json with everything that happened and
// report.html for a person, each a serializer of the one results.Run. While
// a run goes, a Journal keeps each result on disk the moment it is known
// (report.jsonl, and junit.xml rewritten), and ReadJournal rebuilds the Run
// from it, also of a run that was killed.
//
// The journal lives here rather than with the model: report.jsonl is
// report.json's serialization one record per line, and every record it
// appends re-renders junit.xml, so it is persistence by the same
// serializers; package results holds the data alone, and nothing in it
// knows a file.
package reports
