// Entry point of the Hearth desktop application.
#include "main_window.h"

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
    parser.process(app);

    hearth::ui::MainWindow window;
    window.show();
    if (!parser.positionalArguments().isEmpty())
        window.openModel(parser.positionalArguments().first());
    return app.exec();
}
