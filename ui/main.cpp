// Entry point of the Hearth desktop application.
#include "main_window.h"

#include "services/data_dir.h"
#include "services/logging.h"

#include <QApplication>
#include <QCommandLineParser>

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
    const bool chosen = !parser.value(dataDir).isEmpty() || qEnvironmentVariableIsSet("HEARTH_DATA_DIR");
    const QString dir = hearth::app::resolveDataDir(parser.value(dataDir));
    const QString migrated = chosen ? QString() : hearth::app::migrateLegacyDataDir(dir);
    hearth::app::setupLogging(dir);
    if (!migrated.isEmpty()) qInfo("data folder: %s", qPrintable(migrated));
    hearth::ui::MainWindow window(dir);

    window.show();
    if (!parser.positionalArguments().isEmpty())
        window.openModel(parser.positionalArguments().first());
    return app.exec();
}
