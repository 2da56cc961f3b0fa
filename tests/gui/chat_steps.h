// Steps the chat page tests share: the page's conversation list read again from the store and a
// conversation opened from it, as after a restart; a transcript link clicked with the mouse; where
// screenshots go; stories260K loaded.
#pragma once

#include "chat_view.h"
#include "services/engine_host.h"
#include "services/store.h"
#include "test_support.h"

#include <QDir>
#include <QSignalSpy>
#include <QTextBlock>
#include <QTextBrowser>
#include <QTextCursor>
#include <QTextDocument>
#include <QTest>

namespace hearth::test {

// Runs `start` (a send or a regenerate on `chat`) with the host's signals held back until its
// real request is over, so that the test scripts the reply through the same signals: the reply's
// request id, 0 when it did not start, or did not end, in time.
template <class Start>
quint64 heldReply(app::EngineHost& engine, ui::ChatView& chat, Start start) {
    engine.blockSignals(true);
    start();
    const bool started = QTest::qWaitFor([&] { return chat.isGenerating(); }, 10000);
    const quint64 id = chat.activeRequest();
    const bool ended = QTest::qWaitFor([&] { return engine.activeRequests().isEmpty(); }, 20000);
    engine.blockSignals(false);
    return started && ended ? id : 0;
}

// Loads stories260K into `engine`; false when it did not load in time.
inline bool loadStories(app::EngineHost& engine) {
    QSignalSpy loaded(&engine, &app::EngineHost::loaded);
    engine.loadModel(QString::fromStdString(testDataPath("models/stories260K.gguf")), app::LoadSettings());
    return loaded.wait(30000);
}

// Where a test's screenshots go: $HEARTH_SCREENSHOT_DIR, else screenshots/ here (made if missing).
inline QString chatScreenshotDir() {
    const QString dir = qEnvironmentVariableIsSet("HEARTH_SCREENSHOT_DIR")
                            ? qEnvironmentVariable("HEARTH_SCREENSHOT_DIR")
                            : QDir::current().filePath(QStringLiteral("screenshots"));
    QDir().mkpath(dir);
    return dir;
}

// Lists the store's conversations into `chat` (waiting for the list to arrive: the page connected
// first, so it has the list when the spy does) and opens `conversation`.
inline void reopenConversation(ui::ChatView& chat, app::Store& store, qint64 conversation) {
    QSignalSpy listed(&store, &app::Store::conversationsListed);
    chat.reloadConversations();
    QVERIFY(listed.wait(10000));
    chat.openConversation(conversation);
}

// Clicks the transcript's link to `href` with the mouse, as a user would; false if not shown.
inline bool clickLink(ui::ChatView& chat, const QString& href) {
    auto* browser = chat.findChild<QTextBrowser*>();
    if (!browser) return false;
    for (QTextBlock b = browser->document()->begin(); b.isValid(); b = b.next())
        for (auto it = b.begin(); !it.atEnd(); ++it) {
            const QTextFragment f = it.fragment();
            if (f.charFormat().anchorHref() != href) continue;
            QTextCursor c(browser->document());
            c.setPosition(f.position() + f.length() / 2);
            browser->ensureCursorVisible();
            browser->setTextCursor(c);
            browser->ensureCursorVisible();
            const QPoint at = browser->cursorRect(c).center();
            browser->setTextCursor(QTextCursor(browser->document())); // no selection left behind
            QTest::mouseClick(browser->viewport(), Qt::LeftButton, {}, at);
            return true;
        }
    return false;
}

} // namespace hearth::test
