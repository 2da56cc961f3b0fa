// The cases of test_json_schema, one function per test (QVERIFY failures return from them). They
// live outside the Q_OBJECT file because moc misreads raw string literals that hold quotes.
#pragma once

namespace hearth::test::json_schema {
void textOfAnObject();
void textOfRangesAndPatterns();
void unsupportedKeywordsNameTheirPointer();
void badInputIsAnError();
void cyclesThatCannotEndAreErrors();
void hostileSchemasAreBounded();
void objectsAndArrays();
void enumsConstsAndCombinators();
void recursionThroughRefs();
void stringsLengthsPatternsFormats();
void numbers();
void integerRangesExactly();
void numberRangesExactly();
void datesExactly();
void whitespaceIsBounded();
void anyJsonObject();
} // namespace hearth::test::json_schema
