// Notifications floating over the top right of the parent widget (the window's pages), below an
// anchor widget while it shows (the chat's model picker): they take no layout space, so showing
// one moves no control. Information fades after a few seconds; warnings and errors stay until the
// user closes them, so no error is ever overwritten by routine status.
#pragma once

#include <QPointer>
#include <QStringList>
#include <QWidget>

class QVBoxLayout;

namespace hearth::ui {

class NotificationArea : public QWidget {
    Q_OBJECT
public:
    enum class Level { Info, Warning, Error };
    Q_ENUM(Level)

    // Floats over `parent`, following its size.
    explicit NotificationArea(QWidget* parent = nullptr);
    // A widget inside the parent (a page's header, such as the chat's model picker) to stay
    // below while it is visible, so that it is never covered; null: the parent's top.
    void setAnchor(QWidget* widget);

    // The same text as a notification still shown is counted on it (×2) instead of repeated.
    void notify(Level level, const QString& text);
    void dismissAll();
    // How long information stays (ms); warnings and errors stay until closed.
    void setInfoTimeout(int ms) { m_infoTimeoutMs = ms; }

    // What is shown, oldest first, as "error: text" (for tests).
    QStringList shown() const;

Q_SIGNALS:
    void changed();

protected:
    bool eventFilter(QObject* watched, QEvent* event) override;

private:
    void remove(QWidget* row);
    void place(); // over the parent's top right (below the anchor while it shows), as tall as the rows

    QVBoxLayout* m_layout = nullptr;
    int m_infoTimeoutMs = 8000;
    static constexpr int kMaxShown = 6;
    static constexpr int kMargin = 8;
    static constexpr int kMaxWidth = 560;
    QPointer<QWidget> m_anchor;
};

} // namespace hearth::ui
