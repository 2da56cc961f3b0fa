// Main window wiring: menu, status bar, and the model inspector view.
#include "main_window.h"

#include "model_info_view.h"

#include <QFileDialog>
#include <QMenuBar>
#include <QStatusBar>

namespace hearth::ui {

MainWindow::MainWindow(QWidget* parent) : QMainWindow(parent) {
    setWindowTitle(QStringLiteral("Hearth"));
    resize(960, 640);
    m_info = new ModelInfoView(this);
    setCentralWidget(m_info);

    QMenu* file = menuBar()->addMenu(tr("&File"));
    QAction* open = file->addAction(tr("&Open model..."));
    open->setShortcut(QKeySequence::Open);
    connect(open, &QAction::triggered, this, &MainWindow::chooseModel);
    file->addSeparator();
    QAction* quit = file->addAction(tr("&Quit"));
    quit->setShortcut(QKeySequence::Quit);
    connect(quit, &QAction::triggered, this, &QWidget::close);

    connect(m_info, &ModelInfoView::statusChanged, this,
            [this](const QString& text) { statusBar()->showMessage(text); });
    statusBar()->showMessage(tr("Open a GGUF model to inspect it (File > Open)"));
}

void MainWindow::chooseModel() {
    const QString path = QFileDialog::getOpenFileName(this, tr("Open model"), QString(),
                                                      tr("GGUF models (*.gguf);;All files (*)"));
    if (!path.isEmpty()) openModel(path);
}

void MainWindow::openModel(const QString& path) { m_info->load(path); }

} // namespace hearth::ui
