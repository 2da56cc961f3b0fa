// countText and countWord (ui/count_text.h): a count's word agrees with the number, so the UI
// never says "1 repositories".
#include "count_text.h"

#include <QtTest>

using hearth::ui::countText;
using hearth::ui::countWord;

class TestCountText : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void initTestCase() { QLocale::setDefault(QLocale::c()); }

    void agreesWithTheNumber() {
        const QString one = QStringLiteral("repository"), many = QStringLiteral("repositories");
        QCOMPARE(countText(1, one, many), QStringLiteral("1 repository"));
        QCOMPARE(countText(0, one, many), QStringLiteral("0 repositories"));
        QCOMPARE(countText(2, one, many), QStringLiteral("2 repositories"));
        QCOMPARE(countText(-1, one, many), QStringLiteral("-1 repositories"));
        QCOMPARE(countText(1234, QStringLiteral("download"), QStringLiteral("downloads")),
                 QStringLiteral("1234 downloads"));
        QCOMPARE(countWord(1, QStringLiteral("was"), QStringLiteral("were")), QStringLiteral("was"));
        QCOMPARE(countWord(3, QStringLiteral("was"), QStringLiteral("were")), QStringLiteral("were"));
    }
};

QTEST_GUILESS_MAIN(TestCountText)
#include "test_count_text.moc"
