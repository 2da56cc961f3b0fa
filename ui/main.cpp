// Entry point of the Hearth desktop application.
#include "main_window.h"

#include "services/logging.h"

#include <QApplication>
#include <QCommandLineParser>
#include <QStandardPaths>

int main(int argc, char** argv) {
    QApplication app(argc, argv);
    QApplication::setApplicationName(QStringLiteral("Hearth"));
    QApplication::setApplicationVersion(QStringLiteral(HEARTH_VERSION));
    QApplication::setOrganizationName(QStringLiteral("Hearth"));

    QCommandLineParser parser;
    parser.setApplicationDescription(QStringLiteral("Private, on-prem LLM hosting"));
    parser.addHelpOption();
    parser.addVersionOption();
    parser.addPositionalArgument(QStringLiteral("model"), QStringLiteral("GGUF file to open"),
                                 QStringLiteral("[model.gguf]"));
    QCommandLineOption dataDir(QStringLiteral("data-dir"),
                               QStringLiteral("Folder for settings, conversations and models"),
                               QStringLiteral("dir"));
    parser.addOption(dataDir);
    parser.process(app);
    QString dir = parser.value(dataDir);
    if (dir.isEmpty()) dir = qEnvironmentVariable("HEARTH_DATA_DIR");
    if (dir.isEmpty()) dir = QStandardPaths::writableLocation(QStandardPaths::AppDataLocation);
    hearth::app::setupLogging(dir);
    hearth::ui::MainWindow window(dir);

    window.show();
    if (!parser.positionalArguments().isEmpty())
        window.openModel(parser.positionalArguments().first());
    return app.exec();
}
