// The chat composer on its own: Enter sends the box's text and Shift+Enter starts a new line; a
// paste or a drop is offered to the chat page first and goes into the box as text only when the
// page declines it; the buttons ask, and show what the page says works; clear() empties the box and
// the next message's strips.
#include "chat_composer.h"

#include "document_strip.h"
#include "image_strip.h"

#include <QApplication>
#include <QClipboard>
#include <QMimeData>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QSignalSpy>
#include <QtTest>

using namespace hearth;

namespace {

QPushButton* button(ui::ChatComposer& c, const QString& text) {
    for (QPushButton* b : c.findChildren<QPushButton*>())
        if (b->text() == text) return b;
    return nullptr;
}

} // namespace

class TestChatComposer : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void enterSendsShiftEnterBreaksTheLine() {
        ui::ChatComposer c;
        c.show();
        auto* box = c.findChild<QPlainTextEdit*>();
        QVERIFY(box);
        QSignalSpy sent(&c, &ui::ChatComposer::sendRequested);
        QTest::keyClicks(box, QStringLiteral("first line"));
        QTest::keyClick(box, Qt::Key_Return, Qt::ShiftModifier);
        QTest::keyClicks(box, QStringLiteral("second"));
        QCOMPARE(sent.size(), 0);
        QCOMPARE(c.text(), QStringLiteral("first line\nsecond"));
        QTest::keyClick(box, Qt::Key_Return);
        QCOMPARE(sent.size(), 1);
        QCOMPARE(sent.at(0).at(0).toString(), QStringLiteral("first line\nsecond"));
        QTest::keyClick(box, Qt::Key_Enter); // the keypad's
        QCOMPARE(sent.size(), 2);
        QCOMPARE(c.text(), QStringLiteral("first line\nsecond")); // the page clears it once sent
    }

    void pastesAndDropsGoToThePageFirst() {
        ui::ChatComposer c;
        c.show();
        auto* box = c.findChild<QPlainTextEdit*>();
        int offered = 0;
        bool take = true;
        c.setAttachmentTaker([](const QMimeData* d) { return d->hasImage(); },
                             [&](const QMimeData*) {
                                 ++offered;
                                 return take;
                             });
        QApplication::clipboard()->setText(QStringLiteral("pasted"));
        box->setFocus();
        QTest::keyClick(box, Qt::Key_V, Qt::ControlModifier);
        QCOMPARE(offered, 1);
        QCOMPARE(c.text(), QString()); // taken by the page
        take = false;
        QTest::keyClick(box, Qt::Key_V, Qt::ControlModifier);
        QCOMPARE(offered, 2);
        QCOMPARE(c.text(), QStringLiteral("pasted")); // declined: text as ever

        // A drop on the box: what the page wants is its; the rest is left to the box.
        QMimeData image;
        image.setImageData(QImage(4, 4, QImage::Format_RGB32));
        QDragEnterEvent enter(QPoint(5, 5), Qt::CopyAction, &image, Qt::LeftButton, Qt::NoModifier);
        QApplication::sendEvent(box->viewport(), &enter);
        QVERIFY(enter.isAccepted());
        take = true;
        QDropEvent drop(QPointF(5, 5), Qt::CopyAction, &image, Qt::LeftButton, Qt::NoModifier);
        QApplication::sendEvent(box->viewport(), &drop);
        QCOMPARE(offered, 3);
        QVERIFY(drop.isAccepted());
    }

    void buttonsAskAndShowWhatWorks() {
        ui::ChatComposer c;
        QSignalSpy sent(&c, &ui::ChatComposer::sendRequested);
        QSignalSpy stop(&c, &ui::ChatComposer::stopRequested);
        QSignalSpy again(&c, &ui::ChatComposer::regenerateRequested);
        QSignalSpy settings(&c, &ui::ChatComposer::settingsRequested);
        QSignalSpy image(&c, &ui::ChatComposer::attachImageRequested);
        QSignalSpy file(&c, &ui::ChatComposer::attachFileRequested);
        QSignalSpy folder(&c, &ui::ChatComposer::attachFolderRequested);
        c.setActions(true, false, true, false);
        QVERIFY(button(c, QStringLiteral("Send"))->isEnabled());
        QVERIFY(!button(c, QStringLiteral("Stop"))->isEnabled());
        QVERIFY(button(c, QStringLiteral("Regenerate"))->isEnabled());
        QVERIFY(!button(c, QStringLiteral("Chat settings…"))->isEnabled());
        c.setText(QStringLiteral("hello"));
        button(c, QStringLiteral("Send"))->click();
        QCOMPARE(sent.size(), 1);
        QCOMPARE(sent.at(0).at(0).toString(), QStringLiteral("hello"));
        button(c, QStringLiteral("Regenerate"))->click();
        QCOMPARE(again.size(), 1);
        c.setActions(false, true, false, true);
        button(c, QStringLiteral("Stop"))->click();
        button(c, QStringLiteral("Chat settings…"))->click();
        QCOMPARE(stop.size(), 1);
        QCOMPARE(settings.size(), 1);
        button(c, QStringLiteral("Send"))->click(); // disabled: nothing
        QCOMPARE(sent.size(), 1);
        c.attachImageButton()->click();
        c.attachFileButton()->setEnabled(true);
        c.attachFileButton()->click();
        c.attachFolderButton()->setEnabled(true);
        c.attachFolderButton()->click();
        QCOMPARE(image.size() + file.size() + folder.size(), 3);

        c.setEditing(true);
        QVERIFY(button(c, QStringLiteral("Resend")));
        c.setEditing(false);
        QVERIFY(button(c, QStringLiteral("Send")));
        c.setStats(QStringLiteral("12 tokens"), QStringLiteral("Sampled with seed 7"));
        QCOMPARE(c.stats(), QStringLiteral("12 tokens"));
        // However long the statistics line, the row asks no more width for it.
        const int before = c.minimumSizeHint().width();
        c.setStats(QStringLiteral("48 tokens · first token 1 ms · 3390.7 tok/s · 2 of 4 drafted tokens accepted · "
                                  "128 prompt tokens reused · and a great deal more"));
        QCOMPARE(c.minimumSizeHint().width(), before);
        c.setPlaceholder(QStringLiteral("Load a model"));
        QCOMPARE(c.placeholder(), QStringLiteral("Load a model"));
    }

    void clearEmptiesTheNextMessage() {
        ui::ChatComposer c;
        c.setText(QStringLiteral("draft"));
        QImage red(8, 8, QImage::Format_RGB32);
        red.fill(Qt::red);
        QByteArray png;
        QBuffer buffer(&png);
        buffer.open(QIODevice::WriteOnly);
        red.save(&buffer, "PNG");
        c.images()->addImages({png});
        c.documents()->addDocuments({{QStringLiteral("notes.md"), QStringLiteral("Some notes.")}});
        QCOMPARE(c.images()->count(), 1);
        QCOMPARE(c.documents()->count(), 1);
        c.insertText(QStringLiteral(" more"));
        QCOMPARE(c.text(), QStringLiteral("draft more"));
        c.clear();
        QCOMPARE(c.text(), QString());
        QCOMPARE(c.images()->count(), 0);
        QCOMPARE(c.documents()->count(), 0);
    }
};

QTEST_MAIN(TestChatComposer)
#include "test_chat_composer.moc"
