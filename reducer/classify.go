package reducer

import "github.com/agentledger/agentledger/detect"

// Data classes the detectors assign.
const (
	ClassPII         = detect.ClassPII
	ClassPaymentCard = detect.ClassPaymentCard
	ClassSecret      = detect.ClassSecret
	// ClassUnclassified is data a tool read that no label and no detector
	// classified, when the manifest treats unlabelled data as sensitive
	// (data_labels.unlabeled, AARM R2's default).
	ClassUnclassified = "UNCLASSIFIED"
)

// Detection is one kind of sensitive data found in a text.
type Detection = detect.Detection

// maxScan bounds how much of one text the detectors read.
const maxScan = 256 << 10

// Detect returns the kinds of sensitive data in the first maxScan bytes
// of text, sorted by detector, found by the classifying detectors (package
// detect). It never returns the data itself.
func Detect(text string) []Detection {
	if len(text) > maxScan {
		text = text[:maxScan]
	}
	return detect.Classify(text)
}

// DetectWhole is Detect over all of text, however long, for a value the
// engine cut to fit the record.
func DetectWhole(text string) []Detection { return detect.Classify(text) }
