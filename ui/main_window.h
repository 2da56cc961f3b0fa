// The application's main window: for now a model inspector (open a GGUF, see what is inside).
#pragma once

#include <QMainWindow>

namespace hearth::ui {

class ModelInfoView;

class MainWindow : public QMainWindow {
    Q_OBJECT
public:
    explicit MainWindow(QWidget* parent = nullptr);

    // Reads the file's header off the GUI thread and shows it when ready.
    void openModel(const QString& path);

private:
    void chooseModel();

    ModelInfoView* m_info = nullptr;
};

} // namespace hearth::ui
