// Notifications across the top of the window: information fades after a few seconds; warnings
// and errors stay until the user closes them, so no error is ever overwritten by routine status.
#pragma once

#include <QStringList>
#include <QWidget>

class QVBoxLayout;

namespace hearth::ui {

class NotificationArea : public QWidget {
    Q_OBJECT
public:
    enum class Level { Info, Warning, Error };
    Q_ENUM(Level)

    explicit NotificationArea(QWidget* parent = nullptr);

    // The same text as a notification still shown is counted on it (×2) instead of repeated.
    void notify(Level level, const QString& text);
    void dismissAll();
    // How long information stays (ms); warnings and errors stay until closed.
    void setInfoTimeout(int ms) { m_infoTimeoutMs = ms; }

    // What is shown, oldest first, as "error: text" (for tests).
    QStringList shown() const;

Q_SIGNALS:
    void changed();

private:
    struct Entry;
    void remove(QWidget* row);

    QVBoxLayout* m_layout = nullptr;
    int m_infoTimeoutMs = 8000;
    static constexpr int kMaxShown = 6;
};

} // namespace hearth::ui
