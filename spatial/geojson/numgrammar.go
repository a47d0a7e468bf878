// The JSON number grammar as a table: the state after each byte of a
// number, so that scanner.number is one loop over the bytes.

package geojson

// numState is where scanner.number is in a number: before numEnd, in one;
// numEnd, past its last byte; after numEnd, at a byte the grammar refuses.
type numState uint8

const (
	numStart numState = iota // before the first byte
	numMinus                 // after '-'
	numZero                  // after a leading 0: the integer part is complete
	numInt                   // in the digits of the integer part
	numDot                   // after '.'
	numFrac                  // in the fraction
	numE                     // after 'e' or 'E'
	numESign                 // after the exponent's sign
	numExp                   // in the exponent
	numEnd                   // the byte is not part of the number, which ends before it

	numBadInt  // a byte the integer part cannot have
	numBadFrac // a byte other than a digit after '.'
	numBadExp  // a byte the exponent cannot have
)

// numClass is what a byte is to the number grammar.
type numClass uint8

const (
	numOther    numClass = iota // ends the number, or is refused
	numDigit0                   // '0'
	numDigit19                  // '1' to '9'
	numMinusCh                  // '-'
	numPlusCh                   // '+'
	numDotCh                    // '.'
	numExpCh                    // 'e', 'E'
	numClassLen                 // the number of classes
)

// numClasses classifies every byte; those not listed are numOther.
var numClasses = [256]numClass{
	'0': numDigit0,
	'1': numDigit19, '2': numDigit19, '3': numDigit19, '4': numDigit19, '5': numDigit19,
	'6': numDigit19, '7': numDigit19, '8': numDigit19, '9': numDigit19,
	'-': numMinusCh, '+': numPlusCh, '.': numDotCh, 'e': numExpCh, 'E': numExpCh,
}

// numTransitions is the state after a byte of each class in each state
// before numEnd. A 0 after a leading 0 ends the number ("01" is the number
// 0 and a 1), as encoding/json's scanner has it.
var numTransitions = [numEnd][numClassLen]numState{
	// Columns by class: other, 0, 1-9, '-', '+', '.', e/E.
	numStart: {numBadInt, numZero, numInt, numMinus, numBadInt, numBadInt, numBadInt},
	numMinus: {numBadInt, numZero, numInt, numBadInt, numBadInt, numBadInt, numBadInt},
	numZero:  {numEnd, numEnd, numEnd, numEnd, numEnd, numDot, numE},
	numInt:   {numEnd, numInt, numInt, numEnd, numEnd, numDot, numE},
	numDot:   {numBadFrac, numFrac, numFrac, numBadFrac, numBadFrac, numBadFrac, numBadFrac},
	numFrac:  {numEnd, numFrac, numFrac, numEnd, numEnd, numEnd, numE},
	numE:     {numBadExp, numExp, numExp, numESign, numESign, numBadExp, numBadExp},
	numESign: {numBadExp, numExp, numExp, numBadExp, numBadExp, numBadExp, numBadExp},
	numExp:   {numEnd, numExp, numExp, numEnd, numEnd, numEnd, numEnd},
}

// complete tells whether a number that ends in state s is one: the input
// may end there.
func (s numState) complete() bool {
	return s == numZero || s == numInt || s == numFrac || s == numExp
}

// numSyntaxWhere says where in a number a refused byte stood, for the syntax
// error, as encoding/json words it.
func numSyntaxWhere(s numState) string {
	switch s {
	case numBadFrac:
		return "after decimal point in numeric literal"
	case numBadExp:
		return "in exponent of numeric literal"
	}
	return "in numeric literal"
}
