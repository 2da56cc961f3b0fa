// The first-run page: what this computer has (cores, RAM, GPUs and their memory), two or three
// starter models that fit it with their size, license and notes, and one click to download one
// and start chatting; or open a model file already on disk.
#pragma once

#include "services/model_library.h"

#include "hearth/devices.h"

#include <QList>
#include <QWidget>


class QLabel;
class QProgressBar;
class QPushButton;
class QVBoxLayout;

namespace hearth::app {
class DeviceProbe;
class StarterInstall;
}

namespace hearth::ui {

class WelcomeView : public QWidget {
    Q_OBJECT
public:
    // `install` fetches a starter; the view only shows its progress.
    // `devices`: the app's probe (null: one of the view's own, for a page shown alone).
    WelcomeView(app::StarterInstall* install, app::DeviceProbe* devices = nullptr, QWidget* parent = nullptr);
    ~WelcomeView() override;

    // The machine (found in the background at start; tests set it) and the starter list.
    void setMachine(const DeviceList& devices, qint64 availableRamBytes);
    void setStarters(const QList<app::StarterModel>& starters);

    QList<app::StarterModel> recommended() const { return m_recommended; }
    QString machineText() const;
    // Starts the download of recommendation `index` (as its button does).
    void installRecommended(int index);

Q_SIGNALS:
    void openFileRequested();
    void browseRequested();
    void dismissed();

private:
    void rebuildCards();

    app::StarterInstall* m_install;
    QList<app::StarterModel> m_starters;
    QList<app::StarterModel> m_recommended;
    DeviceList m_devices;
    qint64 m_ram = 0;
    bool m_haveMachine = false;
    QLabel* m_machine = nullptr;
    QVBoxLayout* m_cards = nullptr;
    QLabel* m_status = nullptr;
    QProgressBar* m_progress = nullptr;
    QList<QPushButton*> m_buttons;
};

} // namespace hearth::ui
