// Tests of JSON Schema to GBNF: the grammar text for a few schemas, the errors for unsupported
// and hostile schemas (each answered within a time bound), and, through parseGbnf and matchText,
// which concrete JSON documents the grammars accept and reject (with sweeps of integer, decimal
// and date ranges checked against arithmetic). The cases live in test_json_schema_cases.cpp.
#include "test_json_schema_cases.h"

#include <QtTest>

namespace cases = hearth::test::json_schema;

class TestJsonSchema : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void textOfAnObject() { cases::textOfAnObject(); }
    void textOfRangesAndPatterns() { cases::textOfRangesAndPatterns(); }
    void unsupportedKeywordsNameTheirPointer() { cases::unsupportedKeywordsNameTheirPointer(); }
    void badInputIsAnError() { cases::badInputIsAnError(); }
    void cyclesThatCannotEndAreErrors() { cases::cyclesThatCannotEndAreErrors(); }
    void hostileSchemasAreBounded() { cases::hostileSchemasAreBounded(); }
    void objectsAndArrays() { cases::objectsAndArrays(); }
    void enumsConstsAndCombinators() { cases::enumsConstsAndCombinators(); }
    void recursionThroughRefs() { cases::recursionThroughRefs(); }
    void stringsLengthsPatternsFormats() { cases::stringsLengthsPatternsFormats(); }
    void numbers() { cases::numbers(); }
    void integerRangesExactly() { cases::integerRangesExactly(); }
    void numberRangesExactly() { cases::numberRangesExactly(); }
    void datesExactly() { cases::datesExactly(); }
    void whitespaceIsBounded() { cases::whitespaceIsBounded(); }
    void anyJsonObject() { cases::anyJsonObject(); }
};

QTEST_GUILESS_MAIN(TestJsonSchema)
#include "test_json_schema.moc"
